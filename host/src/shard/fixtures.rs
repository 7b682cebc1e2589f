//! Fixtures of the ring's tests: shard Leases and parents as the ring's leader sees them.

use std::marker::PhantomData;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::ObjectMeta;
use kube::core::{DynamicObject, PartialObjectMeta};

use crate::names::MEMBER_LABEL;

/// `member`'s Lease, held by `holder`, renewed at `renewed` (seconds, by the holder's clock).
pub fn lease(member: &str, holder: &str, renewed: i64) -> Lease {
    Lease {
        metadata: ObjectMeta {
            name: Some(format!("shard-{member}")),
            labels: Some([(MEMBER_LABEL.to_string(), member.to_string())].into()),
            resource_version: Some(renewed.to_string()),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(holder.into()),
            renew_time: Some(MicroTime(jiff::Timestamp::from_second(renewed).unwrap())),
            lease_duration_seconds: Some(10),
            ..Default::default()
        }),
    }
}

/// The parent `ns/<name>` (UID `uid-<name>`) at `version`, with `labels`.
pub fn parent(
    name: &str,
    version: &str,
    labels: &[(&str, &str)],
) -> PartialObjectMeta<DynamicObject> {
    let labels = labels.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    PartialObjectMeta {
        types: None,
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            uid: Some(format!("uid-{name}")),
            resource_version: Some(version.into()),
            labels: Some(labels.collect()),
            ..Default::default()
        },
        _phantom: PhantomData,
    }
}
