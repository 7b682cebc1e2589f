use std::time::Duration;

use super::*;
use crate::conversion::secret::{SecretRef, renewed, reusable, to_secret};

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|name| name.to_string()).collect()
}

fn secret_ref() -> SecretRef {
    "ns/webhook-cert".parse().unwrap()
}

const DAY: Duration = Duration::from_secs(86_400);

#[test]
fn a_generated_certificate_verifies_against_its_ca_for_its_names_only() {
    let served = names(&["localhost", "127.0.0.1", "webhook.ns.svc"]);
    let bundle = Bundle::generate(&served, VALIDITY).unwrap();
    let now = SystemTime::now();
    bundle.verify(&served, now).unwrap();
    let other = bundle
        .verify(&names(&["webhook.other.svc"]), now)
        .unwrap_err();
    assert!(other.contains("webhook.other.svc"), "{other}");
    assert!(bundle.verify(&names(&["10.0.0.1"]), now).is_err());
    let later = bundle.verify(&served, now + VALIDITY + DAY).unwrap_err();
    assert!(later.contains("xpired"), "{later}");
    bundle.server_config().unwrap();
}

#[test]
fn a_certificate_does_not_verify_against_another_ca() {
    let served = names(&["localhost"]);
    let mut bundle = Bundle::generate(&served, VALIDITY).unwrap();
    bundle.ca_pem = Bundle::generate(&served, VALIDITY).unwrap().ca_pem;
    assert!(bundle.verify(&served, SystemTime::now()).is_err());
}

#[test]
fn a_good_secret_is_reused() {
    let served = names(&["localhost", "127.0.0.1"]);
    let bundle = Bundle::generate(&served, VALIDITY).unwrap();
    let secret = to_secret(&bundle, &secret_ref());
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    assert_eq!(
        reusable(&secret, &served, SystemTime::now()).unwrap(),
        bundle
    );
    // Fewer names than the certificate covers are fine.
    reusable(&secret, &names(&["localhost"]), SystemTime::now()).unwrap();
}

#[test]
fn an_expiring_secret_is_regenerated() {
    let served = names(&["localhost"]);
    let soon = Bundle::generate(&served, 10 * DAY).unwrap();
    let why = reusable(&to_secret(&soon, &secret_ref()), &served, SystemTime::now()).unwrap_err();
    assert!(why.starts_with("expires within 30 days"), "{why}");
}

#[test]
fn a_renewed_bundle_still_trusts_the_certificate_it_replaces() {
    let served = names(&["localhost"]);
    let old = Bundle::generate(&served, 10 * DAY).unwrap();
    let new = renewed(&served, Some(&to_secret(&old, &secret_ref()))).unwrap();
    assert!(new.ca_pem.ends_with(&old.ca_pem), "{}", new.ca_pem);
    new.still_good(&served, SystemTime::now()).unwrap();
    // A replica that still serves the old certificate is trusted through the new caBundle.
    let old_served_now = Bundle {
        ca_pem: new.ca_pem.clone(),
        ..old.clone()
    };
    old_served_now.verify(&served, SystemTime::now()).unwrap();
    // Only the previous CA is kept: one more renewal drops the oldest.
    let newer = renewed(&served, Some(&to_secret(&new, &secret_ref()))).unwrap();
    assert_eq!(newer.ca_pem.matches("BEGIN CERTIFICATE").count(), 2);
    assert!(!newer.ca_pem.contains(&old.ca_pem));
    // Nothing to keep from no Secret.
    let first = renewed(&served, None).unwrap();
    assert_eq!(first.ca_pem.matches("BEGIN CERTIFICATE").count(), 1);
}

#[test]
fn a_secret_for_other_names_is_regenerated() {
    let secret = to_secret(
        &Bundle::generate(&names(&["localhost"]), VALIDITY).unwrap(),
        &secret_ref(),
    );
    let why = reusable(
        &secret,
        &names(&["localhost", "webhook.ns.svc"]),
        SystemTime::now(),
    )
    .unwrap_err();
    assert!(why.contains("for webhook.ns.svc"), "{why}");
}

#[test]
fn a_secret_with_a_foreign_key_or_a_missing_entry_is_regenerated() {
    let served = names(&["localhost"]);
    let mut bundle = Bundle::generate(&served, VALIDITY).unwrap();
    bundle.key_pem = Bundle::generate(&served, VALIDITY).unwrap().key_pem;
    let secret = to_secret(&bundle, &secret_ref());
    assert!(reusable(&secret, &served, SystemTime::now()).is_err());

    let mut secret = to_secret(&Bundle::generate(&served, VALIDITY).unwrap(), &secret_ref());
    secret.data.as_mut().unwrap().remove("ca.crt");
    assert_eq!(
        reusable(&secret, &served, SystemTime::now()).unwrap_err(),
        "no ca.crt"
    );
}

#[test]
fn a_mounted_secret_without_ca_crt_is_its_own_ca_bundle() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = Bundle::generate(&names(&["localhost"]), VALIDITY).unwrap();
    std::fs::write(dir.path().join("tls.crt"), &bundle.cert_pem).unwrap();
    std::fs::write(dir.path().join("tls.key"), &bundle.key_pem).unwrap();
    let read = Bundle::from_dir(dir.path()).unwrap();
    assert_eq!(read.ca_pem, bundle.cert_pem);
    std::fs::write(dir.path().join("ca.crt"), &bundle.ca_pem).unwrap();
    assert_eq!(Bundle::from_dir(dir.path()).unwrap(), bundle);
    std::fs::remove_file(dir.path().join("tls.key")).unwrap();
    let missing = Bundle::from_dir(dir.path()).unwrap_err().to_string();
    assert!(missing.contains("tls.key"), "{missing}");
}

#[test]
fn secret_references_parse() {
    assert_eq!(
        secret_ref(),
        SecretRef {
            namespace: "ns".into(),
            name: "webhook-cert".into()
        }
    );
    assert!("webhook-cert".parse::<SecretRef>().is_err());
    assert!("ns/a/b".parse::<SecretRef>().is_err());
    assert!("/a".parse::<SecretRef>().is_err());
}
