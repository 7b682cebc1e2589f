use serde_json::json;

use super::*;
use crate::platform::module_ref::ModuleRef;

fn object(namespace: Option<&str>, spec: serde_json::Value) -> DynamicObject {
    let scope = if namespace.is_some() {
        Scope::Namespaced
    } else {
        Scope::Cluster
    };
    let mut object = DynamicObject::new("myapp", &scope.resource()).data(json!({ "spec": spec }));
    object.metadata.namespace = namespace.map(String::from);
    object
}

fn myapp_spec() -> serde_json::Value {
    json!({
        "parent": {"apiVersion": "example.com/v1alpha1", "kind": "MyApp"},
        "children": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
        "module": {"configMap": {"name": "myapp-module", "key": "myapp.wasm"}},
        "serviceAccountName": "myapp-reconciler",
        "limits": {"deadlineMs": 500, "memoryMiB": 16, "maxOutputKiB": 128},
        "concurrency": 8
    })
}

#[test]
fn a_namespaced_reconciler_takes_everything_from_its_namespace() {
    let definition = Definition::read(&object(Some("team-a"), myapp_spec())).unwrap();
    assert_eq!(definition.settings.namespace.as_deref(), Some("team-a"));
    assert_eq!(
        definition.settings.parent.to_string(),
        "example.com/v1alpha1/MyApp"
    );
    assert_eq!(
        definition.settings.children[0].to_string(),
        "apps/v1/Deployment"
    );
    assert_eq!(definition.settings.concurrency, 8);
    assert_eq!(
        definition.module.to_string(),
        "team-a/myapp-module/myapp.wasm"
    );
    assert_eq!(
        definition.user,
        "system:serviceaccount:team-a:myapp-reconciler"
    );
    let config = definition.runtime_config(&RuntimeConfig::default());
    assert_eq!(config.deadline, Duration::from_millis(500));
    assert_eq!(config.memory_limit, 16 << 20);
    assert_eq!(config.max_output_bytes, 128 << 10);
    assert_eq!(definition.settings.identity.label(), "r.team-a.myapp");
}

#[test]
fn a_namespaced_reconciler_cannot_name_another_namespace() {
    let mut spec = myapp_spec();
    spec["module"]["configMap"]["namespace"] = json!("kube-system");
    assert_eq!(
        Definition::read(&object(Some("team-a"), spec)),
        Err(SpecError::ForeignNamespace("module.configMap.namespace"))
    );
    let mut spec = myapp_spec();
    spec["serviceAccount"] = json!({"namespace": "kube-system", "name": "admin"});
    assert_eq!(
        Definition::read(&object(Some("team-a"), spec)),
        Err(SpecError::ForeignNamespace("serviceAccount.namespace"))
    );
}

#[test]
fn a_cluster_reconciler_names_namespaces_and_watches_all() {
    let mut spec = myapp_spec();
    spec["module"]["configMap"]["namespace"] = json!("platform");
    spec["serviceAccount"] = json!({"namespace": "platform", "name": "myapp"});
    let definition = Definition::read(&object(None, spec)).unwrap();
    assert_eq!(definition.settings.namespace, None);
    assert_eq!(
        definition.module.to_string(),
        "platform/myapp-module/myapp.wasm"
    );
    assert_eq!(definition.user, "system:serviceaccount:platform:myapp");
    // Its children name it apart from a namespaced Reconciler of the same name.
    assert_eq!(definition.settings.identity.label(), "c.myapp");

    assert_eq!(
        Definition::read(&object(None, myapp_spec())),
        Err(SpecError::Missing("module.configMap.namespace"))
    );
}

#[test]
fn malformed_specs_say_what_is_wrong() {
    let mut spec = myapp_spec();
    spec["children"] = json!([]);
    assert_eq!(
        Definition::read(&object(Some("a"), spec)),
        Err(SpecError::NoChildren)
    );
    let mut spec = myapp_spec();
    spec["parent"]["kind"] = json!("myapp");
    assert!(matches!(
        Definition::read(&object(Some("a"), spec)),
        Err(SpecError::Kind {
            field: "parent",
            ..
        })
    ));
    let mut spec = myapp_spec();
    spec.as_object_mut().unwrap().remove("serviceAccountName");
    assert_eq!(
        Definition::read(&object(Some("a"), spec)),
        Err(SpecError::Missing("serviceAccountName"))
    );
    let mut spec = myapp_spec();
    spec["related"] = json!([{"apiVersion": "v1", "kind": "configmap"}]);
    assert!(matches!(
        Definition::read(&object(Some("a"), spec)),
        Err(SpecError::Kind {
            field: "related",
            ..
        })
    ));
    let error = Definition::read(&object(Some("a"), json!({"parent": 3}))).unwrap_err();
    assert!(matches!(error, SpecError::Malformed(_)), "{error}");
}

#[test]
fn keys_label_metrics_by_namespace_and_name() {
    let namespaced = Key {
        namespace: Some("team-a".into()),
        name: "myapp".into(),
    };
    assert_eq!(namespaced.to_string(), "team-a/myapp");
    assert_eq!(namespaced.scope(), Scope::Namespaced);
    let cluster = Key {
        namespace: None,
        name: "myapp".into(),
    };
    assert_eq!(cluster.to_string(), "myapp");
    assert_eq!(cluster.scope().resource().plural, "clusterreconcilers");
}

#[test]
fn a_shadow_module_follows_the_module_rules() {
    let mut spec = myapp_spec();
    assert_eq!(
        Definition::read(&object(Some("team-a"), spec.clone()))
            .unwrap()
            .shadow_module,
        None
    );
    spec["shadowModule"] = json!({"configMap": {"name": "myapp-candidate"}});
    let definition = Definition::read(&object(Some("team-a"), spec.clone())).unwrap();
    assert_eq!(
        definition.shadow_module.unwrap().to_string(),
        "team-a/myapp-candidate"
    );
    spec["shadowModule"]["configMap"]["namespace"] = json!("kube-system");
    assert_eq!(
        Definition::read(&object(Some("team-a"), spec.clone())),
        Err(SpecError::ForeignNamespace(
            "shadowModule.configMap.namespace"
        ))
    );
    spec["shadowModule"]["configMap"]["namespace"] = json!(null);
    spec["module"]["configMap"]["namespace"] = json!("team-a");
    spec["serviceAccount"] = json!({"namespace": "team-a", "name": "myapp-reconciler"});
    assert_eq!(
        Definition::read(&object(None, spec)),
        Err(SpecError::Missing("shadowModule.configMap.namespace"))
    );
}

#[test]
fn related_kinds_are_the_reconcilers_allow_list_for_reading() {
    let none = Definition::read(&object(Some("team-a"), myapp_spec())).unwrap();
    assert!(none.settings.related.is_empty());
    let mut spec = myapp_spec();
    spec["related"] = json!([{"apiVersion": "v1", "kind": "ConfigMap"}]);
    let definition = Definition::read(&object(Some("team-a"), spec)).unwrap();
    let related: Vec<String> = definition
        .settings
        .related
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(related, ["v1/ConfigMap"]);
}

#[test]
fn a_cluster_reconciler_places_children_by_namespace_names_and_labels() {
    let mut spec = myapp_spec();
    spec["parent"] = json!({"apiVersion": "v1", "kind": "Namespace"});
    spec["serviceAccount"] = json!({"namespace": "platform", "name": "decorator"});
    spec["module"]["configMap"]["namespace"] = json!("platform");
    spec["childNamespaces"] = json!(["shared"]);
    spec["childNamespaceSelector"] = json!("tenants=enabled");
    spec["parentSelector"] = json!("team");
    spec["namespaceSelector"] = json!("env!=prod");
    let selection = Definition::read(&object(None, spec.clone()))
        .unwrap()
        .settings
        .selection;
    assert_eq!(selection.child_namespaces, ["shared"]);
    assert_eq!(
        selection.child_namespace_selector.unwrap().to_string(),
        "tenants=enabled"
    );
    assert!(selection.parent_selector.is_some());
    assert_eq!(
        selection.namespace_selector.unwrap().to_string(),
        "env!=prod"
    );

    spec["parentSelector"] = json!("team in prod");
    let err = Definition::read(&object(None, spec)).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("spec.parentSelector: label selector `team in prod`"),
        "{err}"
    );
}

#[test]
fn a_namespaced_reconciler_names_no_child_namespaces() {
    for (field, value) in [
        ("childNamespaces", json!(["other"])),
        ("childNamespaceSelector", json!("team")),
        ("namespaceSelector", json!("team")),
    ] {
        let mut spec = myapp_spec();
        spec[field] = value;
        assert_eq!(
            Definition::read(&object(Some("team-a"), spec)).unwrap_err(),
            SpecError::ForeignNamespace(field)
        );
    }
    let mut spec = myapp_spec();
    spec["parentSelector"] = json!("team");
    let definition = Definition::read(&object(Some("team-a"), spec)).unwrap();
    assert!(definition.settings.selection.decorates());
}

/// `myapp_spec` with `module` in place of its ConfigMap module.
fn with_module(module: serde_json::Value) -> serde_json::Value {
    let mut spec = myapp_spec();
    spec["module"] = module;
    spec
}

const REFERENCE: &str = "oci://registry.example.com/team-a/myapp:v1";

fn secret(namespace: &str, name: &str) -> NamespacedName {
    NamespacedName {
        namespace: namespace.into(),
        name: name.into(),
    }
}

#[test]
fn a_module_from_a_registry_names_its_pull_secret() {
    let spec = with_module(json!({"oci": {"reference": REFERENCE, "pullSecretName": "registry"}}));
    let definition = Definition::read(&object(Some("team-a"), spec)).unwrap();
    assert_eq!(
        definition.module,
        ModuleRef::Oci {
            reference: REFERENCE.parse().unwrap(),
            pull_secret: Some(secret("team-a", "registry")),
        }
    );
    let pinned = format!("oci://r.io/myapp@sha256:{}", "a".repeat(64));
    let spec = with_module(json!({"oci": {"reference": pinned}}));
    let definition = Definition::read(&object(Some("team-a"), spec)).unwrap();
    assert!(
        matches!(&definition.module, ModuleRef::Oci { reference, pull_secret: None } if reference.is_digest())
    );

    let mut spec = with_module(json!({"oci": {"reference": REFERENCE,
        "pullSecret": {"namespace": "platform", "name": "registry"}}}));
    spec["serviceAccount"] = json!({"namespace": "platform", "name": "myapp"});
    let definition = Definition::read(&object(None, spec)).unwrap();
    assert!(matches!(
        &definition.module,
        ModuleRef::Oci { pull_secret: Some(s), .. } if *s == secret("platform", "registry")
    ));
}

#[test]
fn a_module_names_exactly_one_source() {
    let both = json!({"configMap": {"name": "myapp-module"}, "oci": {"reference": REFERENCE}});
    for (module, field) in [(both.clone(), "module"), (json!({}), "module")] {
        assert_eq!(
            Definition::read(&object(Some("team-a"), with_module(module))),
            Err(SpecError::NotOneModuleSource(field))
        );
    }
    let mut spec = myapp_spec();
    spec["shadowModule"] = both;
    let error = Definition::read(&object(Some("team-a"), spec)).unwrap_err();
    assert_eq!(error, SpecError::NotOneModuleSource("shadowModule"));
    assert_eq!(
        error.to_string(),
        "spec.shadowModule must set exactly one of configMap and oci"
    );
}

#[test]
fn a_namespaced_reconcilers_pull_secret_is_in_its_own_namespace() {
    let foreign = json!({"oci": {"reference": REFERENCE,
        "pullSecret": {"namespace": "kube-system", "name": "registry"}}});
    assert_eq!(
        Definition::read(&object(Some("team-a"), with_module(foreign))),
        Err(SpecError::ForeignNamespace(
            "module.oci.pullSecret.namespace"
        ))
    );
    let own = json!({"oci": {"reference": REFERENCE,
        "pullSecret": {"namespace": "team-a", "name": "registry"}}});
    assert!(Definition::read(&object(Some("team-a"), with_module(own))).is_ok());
    let both = json!({"oci": {"reference": REFERENCE, "pullSecretName": "registry",
        "pullSecret": {"namespace": "team-a", "name": "registry"}}});
    assert_eq!(
        Definition::read(&object(Some("team-a"), with_module(both))),
        Err(SpecError::TwoPullSecrets("module.oci"))
    );
    let bad_name = json!({"oci": {"reference": REFERENCE, "pullSecretName": "../registry"}});
    assert!(matches!(
        Definition::read(&object(Some("team-a"), with_module(bad_name))),
        Err(SpecError::Name {
            field: "module.oci.pullSecretName",
            ..
        })
    ));
    // A ClusterReconciler says which namespace.
    let mut spec = with_module(json!({"oci": {"reference": REFERENCE, "pullSecretName": "r"}}));
    spec["serviceAccount"] = json!({"namespace": "platform", "name": "myapp"});
    assert_eq!(
        Definition::read(&object(None, spec)),
        Err(SpecError::Missing("module.oci.pullSecret.namespace"))
    );
}

#[test]
fn a_bad_reference_is_refused_with_the_parse_error() {
    for (reference, expected) in [
        ("oci://myapp:v1", "name the registry host"),
        ("oci://r.io/My App:v1", "oci://r.io/My App:v1"),
    ] {
        let spec = with_module(json!({"oci": {"reference": reference}}));
        let error = Definition::read(&object(Some("team-a"), spec)).unwrap_err();
        assert!(
            matches!(
                &error,
                SpecError::Reference {
                    field: "module.oci.reference",
                    ..
                }
            ),
            "{error}"
        );
        assert!(
            error.to_string().starts_with("spec.module.oci.reference: "),
            "{error}"
        );
        assert!(error.to_string().contains(expected), "{error}");
    }
}

#[test]
fn a_child_kind_may_name_its_update_strategy() {
    let mut spec = myapp_spec();
    spec["children"] = json!([
        {"apiVersion": "apps/v1", "kind": "Deployment", "updateStrategy": {"method": "RollingInPlace",
            "statusChecks": {"conditions": [{"type": "Available", "status": "True"}]}}},
        {"apiVersion": "v1", "kind": "ConfigMap"},
    ]);
    let settings = Definition::read(&object(Some("team-a"), spec.clone()))
        .unwrap()
        .settings;
    assert_eq!(settings.children.len(), 2);
    assert_eq!(
        settings.updates.len(),
        1,
        "a kind without a strategy is InPlace"
    );
    assert_eq!(settings.updates[0].kind.to_string(), "apps/v1/Deployment");
    assert_eq!(settings.updates[0].strategy.checks_text(), "Available=True");

    spec["children"][0]["updateStrategy"]["method"] = json!("InPlace");
    let err = Definition::read(&object(Some("team-a"), spec)).unwrap_err();
    assert!(
        matches!(&err, SpecError::Malformed(why) if why.contains("statusChecks")),
        "{err}"
    );
}

#[test]
fn only_a_cluster_reconciler_converts_its_crd_with_the_secret_beside_its_account() {
    let mut spec = myapp_spec();
    spec["conversion"] = json!({});
    assert_eq!(
        Definition::read(&object(Some("team-a"), spec.clone())),
        Err(SpecError::ClusterOnly("conversion"))
    );

    spec["module"]["configMap"]["namespace"] = json!("platform");
    spec["serviceAccount"] = json!({"namespace": "platform", "name": "myapp"});
    let definition = Definition::read(&object(None, spec.clone())).unwrap();
    let secret = definition.conversion_secret.unwrap();
    assert_eq!(secret.to_string(), "platform/myapp-conversion-tls");

    spec["conversion"] = json!({"certificateSecret": "myapp-webhook"});
    let definition = Definition::read(&object(None, spec)).unwrap();
    let secret = definition.conversion_secret.unwrap();
    assert_eq!(secret.to_string(), "platform/myapp-webhook");

    let without = Definition::read(&object(Some("team-a"), myapp_spec())).unwrap();
    assert_eq!(without.conversion_secret, None);
}

/// The fields a Reconciler's spec is read by, for the fuzz target's objects.
const SPEC_KEYS: &[&str] = &[
    "parent",
    "children",
    "related",
    "module",
    "shadowModule",
    "serviceAccountName",
    "serviceAccount",
    "finalizer",
    "concurrency",
    "limits",
    "reuseInstanceCalls",
    "paused",
    "childNamespaces",
    "childNamespaceSelector",
    "parentSelector",
    "namespaceSelector",
    "conversion",
    "apiVersion",
    "kind",
    "configMap",
    "oci",
    "name",
    "namespace",
    "key",
    "reference",
    "pullSecretName",
    "pullSecret",
    "updateStrategy",
    "method",
    "statusChecks",
    "conditions",
    "type",
    "status",
    "reason",
    "progressDeadlineSeconds",
    "deadlineMs",
    "memoryMiB",
    "maxOutputKiB",
    "certificateSecret",
];

proptest::proptest! {
    #![proptest_config(crate::fuzz::config())]

    /// Any spec is read or refused with a reason, and a namespaced Reconciler that is read never
    /// reaches outside its namespace.
    #[test]
    fn fuzz_reconciler_specs_are_read_or_refused(
        fields in crate::fuzz::object(SPEC_KEYS),
        on_a_valid_spec in proptest::prelude::any::<bool>(),
        namespaced in proptest::prelude::any::<bool>(),
    ) {
        // Half the cases change some fields of a spec that reads, so that they get past the
        // required fields to the rules.
        let mut spec = if on_a_valid_spec { myapp_spec() } else { json!({}) };
        for (key, value) in fields.as_object().into_iter().flatten() {
            spec[key] = value.clone();
        }
        let own = namespaced.then_some("team-a");
        match Definition::read(&object(own, spec)) {
            Ok(definition) => {
                proptest::prop_assert_eq!(definition.settings.namespace.as_deref(), own);
                if namespaced {
                    proptest::prop_assert!(definition.user.starts_with("system:serviceaccount:team-a:"));
                    proptest::prop_assert!(definition.conversion_secret.is_none());
                }
            }
            Err(error) => proptest::prop_assert!(!error.to_string().is_empty()),
        }
    }
}
