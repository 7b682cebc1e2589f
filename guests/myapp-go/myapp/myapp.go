// Package myapp is the seed's MyApp controller logic in Go: the same rules, answers and error messages
// as the Rust guest (guests/myapp/src/lib.rs), checked against the same fixtures by the host's
// conformance suite. It uses the standard library only, so it builds and tests natively as well as for
// GOOS=wasip1; the component glue is the export_wit_world package beside it.
//
// A MyApp (spec.replicas, default 1; spec.image, default nginx:alpine) wants one Deployment
// <name>-deploy running that image, and reports status.phase: Created until the observed Deployment has
// as many ready replicas as asked, then Ready. Version example.com/v1beta1 moves the image to
// spec.template.image and adds spec.template.resources; Convert converts between the two without loss.
package myapp

// DefaultReplicas is spec.replicas when the parent leaves it out.
const DefaultReplicas = 1

// DefaultImage is spec.image when the parent leaves it out.
const DefaultImage = "nginx:alpine"

// Output is what the guest wants, the mirror of the contract's response record.
type Output struct {
	// The desired children, one JSON object each.
	Children []string
	// The guest-owned part of .status (a JSON object), or nil to leave the status alone.
	Status *string
	// With finalizing: cleanup is done.
	Finalized bool
}

// Reconcile computes the desired children and status of one MyApp from the parent and the children it
// owns (one JSON object each). While finalizing there is nothing to clean up beyond what the host
// prunes, so the answer is no children and finalized, whatever the spec says (a bad spec must not block
// deletion). It returns an error (never panics) on a parent that is not a JSON object with a name, on
// an invalid spec (the message names the field), and on an observed child that is not JSON.
func Reconcile(parentJSON string, childrenJSON []string, finalizing bool) (Output, error) {
	if finalizing {
		return Output{Finalized: true}, nil
	}
	app, err := readParent(parentJSON)
	if err != nil {
		return Output{}, err
	}
	deployName := app.name + "-deploy"
	ready, observed, err := readyReplicas(childrenJSON, deployName)
	if err != nil {
		return Output{}, err
	}
	phase := "Created"
	if observed && ready == int64(app.replicas) {
		phase = "Ready"
	}
	status := statusJSON(phase, app.replicas, ready)
	return Output{
		Children: []string{deploymentJSON(app, deployName)},
		Status:   &status,
	}, nil
}
