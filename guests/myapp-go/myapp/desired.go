package myapp

// What the rule writes: the Deployment, as the seed's create_deployment builds it, and the status.
// Typed structs, so that encoding/json writes them without building a map per object.

type deployment struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   objectMeta     `json:"metadata"`
	Spec       deploymentSpec `json:"spec"`
}

type objectMeta struct {
	Name      string  `json:"name"`
	Namespace *string `json:"namespace,omitempty"`
	Labels    labels  `json:"labels"`
}

type labels struct {
	App string `json:"app"`
}

type deploymentSpec struct {
	Replicas int32       `json:"replicas"`
	Selector selector    `json:"selector"`
	Template podTemplate `json:"template"`
}

type selector struct {
	MatchLabels labels `json:"matchLabels"`
}

type podTemplate struct {
	Metadata templateMeta `json:"metadata"`
	Spec     podSpec      `json:"spec"`
}

type templateMeta struct {
	Labels labels `json:"labels"`
}

type podSpec struct {
	Containers []container `json:"containers"`
}

type container struct {
	Name  string          `json:"name"`
	Image string          `json:"image"`
	Ports []containerPort `json:"ports"`
	// Left out when the parent sets none, so that such Deployments read as before v1beta1 (an
	// interface, not a map: omitempty drops an empty map, and `resources: {}` is the parent's to keep).
	Resources any `json:"resources,omitempty"`
}

type containerPort struct {
	ContainerPort int `json:"containerPort"`
}

// statusOf is the guest-owned status: the phase and the replica counts.
type statusOf struct {
	Phase         string `json:"phase"`
	Replicas      int32  `json:"replicas"`
	ReadyReplicas int64  `json:"readyReplicas"`
}

// deploymentFor is the apps/v1 Deployment deployName: labels and selector app: <name>, one container
// main with the parent's image, port 80, and its resources if it has any.
func deploymentFor(app parent, deployName string) deployment {
	appLabels := labels{App: app.name}
	var resources any
	if app.resources != nil {
		resources = app.resources
	}
	return deployment{
		APIVersion: "apps/v1",
		Kind:       "Deployment",
		Metadata:   objectMeta{Name: deployName, Namespace: app.namespace, Labels: appLabels},
		Spec: deploymentSpec{
			Replicas: app.replicas,
			Selector: selector{MatchLabels: appLabels},
			Template: podTemplate{
				Metadata: templateMeta{Labels: appLabels},
				Spec: podSpec{Containers: []container{{
					Name:      "main",
					Image:     app.image,
					Ports:     []containerPort{{ContainerPort: 80}},
					Resources: resources,
				}}},
			},
		},
	}
}
