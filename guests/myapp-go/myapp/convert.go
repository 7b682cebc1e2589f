package myapp

// Converting a MyApp between the versions of its CRD, for the conversion webhook the host serves, as
// guests/myapp/src/convert.rs does. v1alpha1 has spec.image; v1beta1 moved it to spec.template.image,
// beside the new spec.template.resources. Down to v1alpha1, whatever of spec.template v1alpha1 cannot
// hold is kept as JSON in the annotation TemplateAnnotation, which up-conversion restores and removes,
// so that a round trip loses nothing. Everything else is kept as it is; only apiVersion changes.
//
// The annotation is also written for a template: {} or a template without an image, so that absent and
// empty templates survive the round trip apart; not for a template holding only an image. An emptied
// metadata.annotations map is dropped, as the API server drops empty maps in metadata anyway.

import (
	"errors"
	"fmt"
	"strings"
)

// Group is the API group of MyApp.
const Group = "example.com"

// TemplateAnnotation is where a v1alpha1 object keeps what it cannot hold of a v1beta1 spec.template,
// as a JSON object.
const TemplateAnnotation = "myapp.example.com/v1beta1-template"

// knownVersions are the versions Convert knows, for error messages.
const knownVersions = "v1alpha1, v1beta1"

// parseVersion reads an apiVersion example.com/<version>; what says whose it is, for the error.
func parseVersion(apiVersion, what string) (string, error) {
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return "", fmt.Errorf("%s apiVersion %q is not %s/<version> (known versions: %s)",
			what, apiVersion, Group, knownVersions)
	}
	if group != Group {
		return "", fmt.Errorf("%s group %q (apiVersion %q) is not %s", what, group, apiVersion, Group)
	}
	if version != "v1alpha1" && version != "v1beta1" {
		return "", fmt.Errorf("unknown %s version %q (apiVersion %q): known versions of %s are %s",
			what, version, apiVersion, Group, knownVersions)
	}
	return version, nil
}

// Convert returns the MyApp objectJSON converted to toAPIVersion (e.g. example.com/v1beta1), or the
// object unchanged when it is at that version already. It returns an error (never panics) on an object
// that is not a JSON object or not a MyApp, on an unknown source or target version or group, on an
// invalid TemplateAnnotation, and on an object whose spec holds an unknown key where the other version
// has a field (it would be lost or overwritten).
func Convert(objectJSON, toAPIVersion string) (string, error) {
	tree, err := decode(objectJSON)
	if err != nil {
		return "", fmt.Errorf("object is not valid JSON: %v", err)
	}
	obj := object(tree)
	if obj == nil {
		return "", fmt.Errorf("object is not a JSON object, got %s", toJSON(tree))
	}
	switch kind, present := obj["kind"]; {
	case !present:
		return "", errors.New("object has no kind, not MyApp")
	case kind != "MyApp":
		return "", fmt.Errorf("object kind is %s, not MyApp", toJSON(kind))
	}
	apiVersion, ok := str(obj["apiVersion"])
	if !ok {
		return "", errors.New("object has no apiVersion string")
	}
	from, err := parseVersion(apiVersion, "object")
	if err != nil {
		return "", err
	}
	to, err := parseVersion(toAPIVersion, "target")
	if err != nil {
		return "", err
	}
	if from == to {
		return objectJSON, nil
	}
	if to == "v1beta1" {
		err = up(obj)
	} else {
		err = down(obj)
	}
	if err != nil {
		return "", err
	}
	obj["apiVersion"] = toAPIVersion
	return toJSON(obj), nil
}

// savedTemplate reads the content of TemplateAnnotation: a JSON object.
func savedTemplate(text string) (map[string]any, error) {
	tree, err := decode(text)
	if err != nil {
		return nil, fmt.Errorf("annotation %s is not valid JSON: %v", TemplateAnnotation, err)
	}
	saved := object(tree)
	if saved == nil {
		return nil, fmt.Errorf("annotation %s must hold a JSON object, got %s", TemplateAnnotation, toJSON(tree))
	}
	return saved, nil
}

// up converts v1alpha1 to v1beta1: spec.image and the annotation's template become spec.template.
func up(obj map[string]any) error {
	saved, err := takeAnnotation(obj)
	if err != nil {
		return err
	}
	spec, err := specOf(obj, saved != nil)
	if spec == nil || err != nil {
		return err
	}
	if _, present := spec["template"]; present {
		return errors.New("spec.template is not a v1alpha1 field, and in v1beta1 it is the pod template: cannot convert")
	}
	image, hasImage := spec["image"]
	delete(spec, "image")
	if saved == nil && !hasImage {
		return nil
	}
	template := saved
	if template == nil {
		template = map[string]any{}
	}
	if hasImage {
		template["image"] = image
	}
	spec["template"] = template
	return nil
}

// down converts v1beta1 to v1alpha1: spec.template.image becomes spec.image, the rest of the template
// the annotation.
func down(obj map[string]any) error {
	if _, annotated := object(path(obj, "metadata", "annotations"))[TemplateAnnotation]; annotated {
		return fmt.Errorf("annotation %s is reserved for conversion: a v1beta1 object must not carry it", TemplateAnnotation)
	}
	spec, err := specOf(obj, false)
	if spec == nil || err != nil {
		return err
	}
	if _, present := spec["image"]; present {
		return errors.New("spec.image is not a v1beta1 field (the image is spec.template.image), and in v1alpha1 it is the image: cannot convert")
	}
	value, present := spec["template"]
	if !present {
		return nil
	}
	delete(spec, "template")
	rest := object(value)
	if rest == nil {
		return fmt.Errorf("spec.template must be an object, got %s", toJSON(value))
	}
	image, hasImage := rest["image"]
	delete(rest, "image")
	if hasImage {
		spec["image"] = image
	}
	if len(rest) > 0 || !hasImage {
		annotations, err := annotationsOrNew(obj)
		if err != nil {
			return err
		}
		annotations[TemplateAnnotation] = toJSON(rest)
	}
	return nil
}

// specOf is the spec, if there is one to change (null is none); with create, an empty one where there
// is none.
func specOf(obj map[string]any, create bool) (map[string]any, error) {
	switch value := obj["spec"]; {
	case value == nil && !create:
		return nil, nil
	case value == nil:
		spec := map[string]any{}
		obj["spec"] = spec
		return spec, nil
	case object(value) == nil:
		return nil, fmt.Errorf("spec must be an object, got %s", toJSON(value))
	default:
		return object(value), nil
	}
}

// takeAnnotation removes TemplateAnnotation and returns its content, dropping the annotations map if
// it empties.
func takeAnnotation(obj map[string]any) (map[string]any, error) {
	annotations := object(path(obj, "metadata", "annotations"))
	value, present := annotations[TemplateAnnotation]
	if !present {
		return nil, nil
	}
	text, ok := str(value)
	if !ok {
		return nil, fmt.Errorf("annotation %s must be a string, got %s", TemplateAnnotation, toJSON(value))
	}
	saved, err := savedTemplate(text)
	if err != nil {
		return nil, err
	}
	delete(annotations, TemplateAnnotation)
	if len(annotations) == 0 {
		delete(object(obj["metadata"]), "annotations")
	}
	return saved, nil
}

// annotationsOrNew is the annotations map, created (with metadata) where there is none.
func annotationsOrNew(obj map[string]any) (map[string]any, error) {
	if obj["metadata"] == nil {
		obj["metadata"] = map[string]any{}
	}
	metadata := object(obj["metadata"])
	if metadata == nil {
		return nil, errors.New("metadata must be an object")
	}
	if metadata["annotations"] == nil {
		metadata["annotations"] = map[string]any{}
	}
	annotations := object(metadata["annotations"])
	if annotations == nil {
		return nil, errors.New("metadata.annotations must be an object")
	}
	return annotations, nil
}
