# controller.py: the seed's Python MyApp controller, for the benchmark (make bench).
#
# Copied from the seed document as written, with its indentation restored (the document lost it) and
# one change so that it runs out of cluster: config.load_kube_config() (KUBECONFIG) instead of
# config.load_incluster_config(). Its comments were in Chinese; they are translated.
from kubernetes import client, config, watch
import time

# Load the Kubernetes configuration
config.load_kube_config()  # was: config.load_incluster_config() (in-cluster use)
api = client.CustomObjectsApi()
apps_api = client.AppsV1Api()

# CRD parameters
GROUP = "example.com"
VERSION = "v1alpha1"
PLURAL = "myapps"


def create_deployment(name, namespace, replicas, image):
    """Creates the Deployment for a MyApp resource"""
    deployment = client.V1Deployment(
        metadata=client.V1ObjectMeta(name=f"{name}-deploy"),
        spec=client.V1DeploymentSpec(
            replicas=replicas,
            selector=client.V1LabelSelector(match_labels={"app": name}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": name}),
                spec=client.V1PodSpec(
                    containers=[
                        client.V1Container(
                            name="main",
                            image=image,
                            ports=[client.V1ContainerPort(container_port=80)],
                        )
                    ]
                ),
            ),
        ),
    )
    apps_api.create_namespaced_deployment(namespace, deployment)


def update_status(name, namespace, status):
    """Updates the MyApp status"""
    patch = {"status": {"phase": status}}
    api.patch_namespaced_custom_object_status(GROUP, VERSION, namespace, PLURAL, name, patch)


def reconcile(obj):
    """The core of the reconcile loop"""
    try:
        spec = obj.get("spec", {})
        meta = obj.get("metadata", {})
        name = meta.get("name")
        namespace = meta.get("namespace")
        replicas = spec.get("replicas", 1)
        image = spec.get("image", "nginx:alpine")
        # Does the Deployment exist?
        deploy_name = f"{name}-deploy"
        apps_api.read_namespaced_deployment(deploy_name, namespace)
        update_status(name, namespace, "Ready")
    except client.ApiException as e:
        if e.status == 404:
            create_deployment(name, namespace, replicas, image)
            update_status(name, namespace, "Created")
        else:
            print(f"Error: {e}")


def main():
    """The main watch loop"""
    w = watch.Watch()
    while True:
        try:
            for event in w.stream(
                api.list_cluster_custom_object, group=GROUP, version=VERSION, plural=PLURAL
            ):
                print(f"Event: {event['type']} {event['object']['metadata']['name']}")
                reconcile(event["object"])
        except Exception as e:
            print(f"Watch error: {e}")
            time.sleep(5)


if __name__ == "__main__":
    main()
