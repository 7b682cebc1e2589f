//! The `oci://` module source against a real registry (go-containerregistry's, built from Go modules):
//! modules pushed with `reconcile-host push`, pulled by tag and by digest, a retag followed, a restart
//! served from the disk cache, and each failure (a corrupted layer, a missing tag, the registry down at
//! start or at a swap, credentials required, an HTTPS registry with a private CA) a clear error that never yields another module, so the
//! hot swap keeps the last good one.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use reconcile_host::source::oci::{Credentials, OciSource, Transport};
use reconcile_host::source::{ModuleSource, Update};

use common::guests::{component, myapp_variant_b};
use common::registry::Registry;

/// Polls fast, so that the tests wait little; nothing asserts on time.
const POLL: Duration = Duration::from_millis(200);

fn source(registry: &Registry, reference: &str, cache: Option<&Path>) -> ModuleSource {
    source_with(
        reference,
        plain_http(registry),
        Credentials::Anonymous,
        cache,
    )
}

fn plain_http(registry: &Registry) -> Transport {
    Transport {
        plain_http: vec![registry.addr.clone()],
        ..Transport::default()
    }
}

fn source_with(
    reference: &str,
    transport: Transport,
    credentials: Credentials,
    cache: Option<&Path>,
) -> ModuleSource {
    ModuleSource::Oci(Arc::new(OciSource {
        reference: reference.parse().unwrap(),
        transport,
        credentials,
        poll_interval: POLL,
        cache_dir: cache.map(Path::to_path_buf),
    }))
}

/// The next update; a source that stays silent for a minute is a failure, not a wait forever.
async fn next(updates: &mut BoxStream<'static, Update>) -> Update {
    tokio::time::timeout(Duration::from_secs(60), updates.next())
        .await
        .expect("the source yielded nothing for a minute")
        .expect("the source ended")
}

fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

fn manifest_digest(reference: &str) -> &str {
    reference.rsplit_once('@').unwrap().1
}

#[tokio::test]
async fn pulls_by_tag_and_by_digest_and_never_polls_a_digest() {
    let registry = Registry::start();
    let module = component("guest_myapp");
    let pinned = registry.push(&module, "myapp:v1", &[]);
    let digest = manifest_digest(&pinned);

    let mut by_digest = source(&registry, &pinned, None).updates(None);
    assert_eq!(next(&mut by_digest).await.unwrap(), bytes(&module));
    let mut by_tag = source(&registry, &registry.reference("myapp:v1"), None).updates(None);
    assert_eq!(next(&mut by_tag).await.unwrap(), bytes(&module));
    let digest_requests = || {
        registry
            .log()
            .matches(&format!("manifests/{digest}"))
            .count()
    };
    let after_pull = digest_requests();

    // Moving the tag is followed (the tag source pulls the new manifest by its digest); the digest
    // source asks nothing more, however many polls the tag source makes meanwhile.
    let variant = myapp_variant_b();
    registry.push(&variant, "myapp:v1", &[]);
    assert_eq!(next(&mut by_tag).await.unwrap(), bytes(&variant));
    let head_requests = || {
        registry
            .log()
            .matches("HEAD /v2/myapp/manifests/v1")
            .count()
    };
    let polls = head_requests();
    common::myapp::wait_for("three more polls of the tag", || async {
        (head_requests() >= polls + 3).then_some(())
    })
    .await;
    assert_eq!(digest_requests(), after_pull, "{}", registry.log());
}

#[tokio::test]
async fn a_restart_takes_the_module_from_the_cache_even_with_the_registry_down() {
    let mut registry = Registry::start();
    let cache = tempfile::tempdir().unwrap();
    let module = component("guest_myapp");
    let pinned = registry.push(&module, "myapp:v1", &[]);
    let tag = registry.reference("myapp:v1");
    for reference in [&pinned, &tag] {
        let mut updates = source(&registry, reference, Some(cache.path())).updates(None);
        assert_eq!(next(&mut updates).await.unwrap(), bytes(&module));
    }
    let blobs_served = registry.log().matches("GET /v2/myapp/blobs/").count();

    // A digest is served from the cache: the registry is asked only whether it accepts the
    // credentials (a HEAD of the manifest), no layer is pulled.
    let mut updates = source(&registry, &pinned, Some(cache.path())).updates(None);
    assert_eq!(next(&mut updates).await.unwrap(), bytes(&module));
    assert_eq!(
        registry.log().matches("GET /v2/myapp/blobs/").count(),
        blobs_served,
        "the layer was pulled again"
    );

    // A tag the registry cannot resolve gets the digest it had at the last pull, from the cache.
    registry.stop();
    let mut updates = source(&registry, &tag, Some(cache.path())).updates(None);
    assert_eq!(next(&mut updates).await.unwrap(), bytes(&module));
    // Without a cache there is nothing to fall back on: a clear error.
    let mut updates = source(&registry, &tag, None).updates(None);
    let error = next(&mut updates).await.unwrap_err();
    assert!(
        error.contains(&format!("resolving {tag}")) && error.contains("Connection refused"),
        "{error}"
    );
}

#[tokio::test]
async fn a_corrupted_layer_is_refused_and_the_next_good_version_is_taken() {
    let registry = Registry::start();
    let (module, variant) = (component("guest_myapp"), myapp_variant_b());
    let good = registry.push(&module, "myapp:v1", &[]);
    let mut updates = source(&registry, &registry.reference("myapp:v1"), None).updates(None);
    assert_eq!(next(&mut updates).await.unwrap(), bytes(&module));

    // The variant is uploaded under another tag and its layer damaged in the registry's storage
    // before the watched tag points at it.
    let bad = registry.push(&variant, "myapp:staging", &[]);
    let layer = registry.layer("myapp", manifest_digest(&bad));
    registry.corrupt(&layer);
    registry.tag("myapp", manifest_digest(&bad), "v1");
    let error = next(&mut updates).await.unwrap_err();
    assert!(
        error.contains("does not match its digest") && error.contains(&layer),
        "{error}"
    );

    // Refused once, not at every poll; the next version that checks out is the next update.
    registry.tag("myapp", manifest_digest(&good), "v1");
    assert_eq!(next(&mut updates).await.unwrap(), bytes(&module));
}

#[tokio::test]
async fn a_missing_tag_and_a_registry_down_at_a_swap_are_errors_and_never_a_module() {
    let mut registry = Registry::start();
    let module = component("guest_myapp");
    registry.push(&module, "myapp:v1", &[]);

    let missing = registry.reference("myapp:nope");
    let mut updates = source(&registry, &missing, None).updates(None);
    let error = next(&mut updates).await.unwrap_err();
    assert!(
        error.contains(&format!("resolving {missing}")) && error.contains("Unknown manifest"),
        "{error}"
    );

    let mut updates = source(&registry, &registry.reference("myapp:v1"), None).updates(None);
    assert_eq!(next(&mut updates).await.unwrap(), bytes(&module));
    registry.stop();
    let error = next(&mut updates).await.unwrap_err();
    assert!(error.contains("Connection refused"), "{error}");
}

#[tokio::test]
async fn a_registry_that_wants_credentials_gets_them_from_a_dockerconfigjson() {
    let registry = Registry::with_auth("robot:s3cret");
    let module = component("guest_myapp");
    let reference = registry.reference("myapp:v1");

    // Pushing needs them too.
    let refused = registry.push_output(&module, "myapp:v1", &[]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && stderr.contains("UNAUTHORIZED"),
        "{stderr}"
    );

    let dir = tempfile::tempdir().unwrap();
    let credentials = registry.credentials_file(dir.path());
    let flag = credentials.to_str().unwrap();
    registry.push(&module, "myapp:v1", &["--oci-credentials", flag]);

    let mut anonymous = source(&registry, &reference, None).updates(None);
    let error = next(&mut anonymous).await.unwrap_err();
    assert!(error.contains("wants credentials"), "{error}");

    let with_credentials = Credentials::File(credentials);
    let mut updates =
        source_with(&reference, plain_http(&registry), with_credentials, None).updates(None);
    assert_eq!(next(&mut updates).await.unwrap(), bytes(&module));
}

#[tokio::test]
async fn an_https_registry_with_a_private_ca_is_trusted_only_with_its_ca_file() {
    let registry = Registry::with_tls();
    let module = component("guest_myapp");
    let pinned = registry.push(&module, "myapp:v1", &[]);
    let ca = registry.ca.clone().unwrap();

    let untrusted = source_with(&pinned, Transport::default(), Credentials::Anonymous, None);
    let error = next(&mut untrusted.updates(None)).await.unwrap_err();
    assert!(error.contains("UnknownIssuer"), "{error}");
    // Trusted once the operator names its CA (on top of the system's).
    let trusted = Transport {
        ca_file: Some(ca),
        ..Transport::default()
    };
    let mut updates = source_with(&pinned, trusted, Credentials::Anonymous, None).updates(None);
    assert_eq!(next(&mut updates).await.unwrap(), bytes(&module));
}

#[tokio::test]
async fn a_restart_with_refused_credentials_gets_no_cached_module_and_an_outage_still_does() {
    let mut registry = Registry::with_auth("robot:s3cret");
    let module = component("guest_myapp");
    let dir = tempfile::tempdir().unwrap();
    let good = registry.credentials_file(dir.path());
    let pinned = registry.push(
        &module,
        "myapp:v1",
        &["--oci-credentials", good.to_str().unwrap()],
    );
    let tag = registry.reference("myapp:v1");
    let cache = tempfile::tempdir().unwrap();
    let transport = plain_http(&registry);
    let start = |reference: &str, credentials: &Path| {
        let credentials = Credentials::File(credentials.to_path_buf());
        source_with(
            reference,
            transport.clone(),
            credentials,
            Some(cache.path()),
        )
        .updates(None)
    };
    for reference in [&pinned, &tag] {
        assert_eq!(
            next(&mut start(reference, &good)).await.unwrap(),
            bytes(&module)
        );
    }

    // The password is revoked: the registry answers, and refuses. Nothing cached is served.
    let revoked = dir.path().join("revoked.json");
    let config = registry
        .docker_config()
        .replace(&base64_of("robot:s3cret"), &base64_of("robot:revoked"));
    std::fs::write(&revoked, config).unwrap();
    for reference in [&pinned, &tag] {
        let error = next(&mut start(reference, &revoked)).await.unwrap_err();
        assert!(
            error.contains("the registry refused the credentials"),
            "{error}"
        );
    }
    // With the good credentials again, the cached layer is served, not pulled again.
    let blobs = || registry.log().matches("GET /v2/myapp/blobs/").count();
    let pulled = blobs();
    assert_eq!(
        next(&mut start(&pinned, &good)).await.unwrap(),
        bytes(&module)
    );
    assert_eq!(blobs(), pulled, "the layer was pulled again");

    // A registry that does not answer cannot refuse: the cache stands in, whatever the credentials.
    registry.stop();
    for reference in [&pinned, &tag] {
        assert_eq!(
            next(&mut start(reference, &revoked)).await.unwrap(),
            bytes(&module)
        );
    }
}

fn base64_of(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}
