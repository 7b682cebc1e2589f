package myapp

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// parent is the MyApp as the rule needs it, checked.
type parent struct {
	name      string
	namespace *string
	replicas  int32
	image     string
	// The container's resources, checked; nil leaves them out of the Deployment.
	resources map[string]any
}

// v1beta1 is the apiVersion read with v1beta1's spec; any other (the seed's parents may leave
// apiVersion out) is read as v1alpha1, whose resources, if any, are in the annotation that
// down-conversion wrote.
const v1beta1 = Group + "/v1beta1"

// readParent reads and checks a parent. Errors name the field at fault.
func readParent(text string) (parent, error) {
	tree, err := decode(text)
	if err != nil {
		return parent{}, fmt.Errorf("parent is not valid JSON: %v", err)
	}
	// The spec's shape first, then the name: the order of the Rust guest's checks.
	spec := object(path(tree, "spec"))
	if raw := path(tree, "spec"); raw != nil && spec == nil {
		return parent{}, fmt.Errorf("spec must be an object, got %s", toJSON(raw))
	}
	name, _ := str(path(tree, "metadata", "name"))
	if name == "" {
		return parent{}, errors.New("parent has no metadata.name")
	}
	if len(name) > 63 {
		// The name is also the app label value, which Kubernetes caps at 63 characters.
		return parent{}, fmt.Errorf(
			"metadata.name %q is longer than 63 characters, too long for the app label", name)
	}
	app := parent{name: name}
	if namespace, ok := str(path(tree, "metadata", "namespace")); ok {
		app.namespace = &namespace
	}
	if app.replicas, err = replicasOf(spec["replicas"]); err != nil {
		return parent{}, err
	}
	if apiVersion, _ := str(path(tree, "apiVersion")); apiVersion == v1beta1 {
		app.image, app.resources, err = v1beta1Template(spec["template"])
	} else {
		saved, annotated := str(path(tree, "metadata", "annotations", TemplateAnnotation))
		app.image, app.resources, err = v1alpha1Template(spec["image"], saved, annotated)
	}
	return app, err
}

// v1beta1Template is the image and resources of a v1beta1 spec, from its spec.template.
func v1beta1Template(value any) (string, map[string]any, error) {
	template := object(value)
	if value != nil && template == nil {
		return "", nil, fmt.Errorf("spec.template must be an object, got %s", toJSON(value))
	}
	image, err := imageOf(template["image"], "spec.template.image")
	if err != nil {
		return "", nil, err
	}
	resources, err := resourcesOf(template["resources"], "spec.template.resources")
	return image, resources, err
}

// v1alpha1Template is the image and resources of a v1alpha1 spec: spec.image, and the resources that
// down-conversion kept in the annotation (saved), if any.
func v1alpha1Template(image any, saved string, annotated bool) (string, map[string]any, error) {
	name, err := imageOf(image, "spec.image")
	if err != nil || !annotated {
		return name, nil, err
	}
	template, err := savedTemplate(saved)
	if err != nil {
		return "", nil, err
	}
	field := "the " + TemplateAnnotation + " annotation's resources"
	resources, err := resourcesOf(template["resources"], field)
	return name, resources, err
}

// replicasOf reads spec.replicas: absent or null takes the default.
func replicasOf(value any) (int32, error) {
	if value == nil {
		return DefaultReplicas, nil
	}
	if number, ok := value.(jsonNumber); ok {
		if n, err := strconv.ParseInt(number.String(), 10, 32); err == nil && n >= 0 {
			return int32(n), nil
		}
	}
	return 0, fmt.Errorf("spec.replicas must be an integer from 0 to 2147483647, got %s", toJSON(value))
}

// imageOf reads the image (field): absent or null takes the default.
func imageOf(value any, field string) (string, error) {
	if value == nil {
		return DefaultImage, nil
	}
	if image, ok := str(value); ok && strings.TrimSpace(image) != "" {
		return image, nil
	}
	return "", fmt.Errorf("%s must be a non-empty string, got %s", field, toJSON(value))
}

// resourcesOf reads the resources (field), a corev1 ResourceRequirements: absent or null is none.
// Only requests and limits are checked (maps of quantities, which JSON carries as strings or
// numbers); other keys (claims) are the API server's to check when it takes the Deployment.
func resourcesOf(value any, field string) (map[string]any, error) {
	if value == nil {
		return nil, nil
	}
	resources := object(value)
	if resources == nil {
		return nil, fmt.Errorf("%s must be an object, got %s", field, toJSON(value))
	}
	for _, key := range []string{"requests", "limits"} {
		quantities := resources[key]
		if quantities == nil {
			continue
		}
		if object(quantities) == nil {
			return nil, fmt.Errorf("%s.%s must be a map, got %s", field, key, toJSON(quantities))
		}
		for _, name := range sortedKeys(object(quantities)) {
			switch quantity := object(quantities)[name]; quantity.(type) {
			case string, jsonNumber:
			default:
				return nil, fmt.Errorf("%s.%s.%s must be a quantity (a string or a number), got %s",
					field, key, name, toJSON(quantity))
			}
		}
	}
	return resources, nil
}
