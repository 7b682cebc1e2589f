//! `reconcile-host migrate-storage`: rewrites every object of a CRD at its storage version, then trims
//! the CRD's `status.storedVersions` to that version.
//!
//! Switching a CRD's storage version changes how objects are written from then on; the ones already in
//! etcd stay in the old version until something writes them. A version can only be removed from the CRD
//! once no object is stored in it, and the API server tracks that in `status.storedVersions`, which only
//! grows. This is the kube-storage-version-migrator's procedure in one command: each object is read and
//! written back unchanged (`PUT`), which the API server encodes at the storage version (through the
//! conversion webhook when the versions differ) and skips when the bytes are already the same; only when
//! every object was rewritten is `storedVersions` trimmed.
//!
//! The API server takes a moment to switch to a CRD's new storage version: a rewrite before that stores
//! the object in the old version again, and trimming `storedVersions` then would hide it. So the command
//! first waits until discovery reports the new version's `storageVersionHash`, the signal the
//! kube-storage-version-migrator uses too.

use std::io::Write;
use std::time::Duration;

use base64::Engine;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::{Client, ResourceExt};
use serde_json::json;
use sha2::{Digest, Sha256};

/// What a migration did.
#[derive(Debug, Default, PartialEq)]
pub struct Migration {
    pub storage_version: String,
    /// Objects the API server wrote again (their resourceVersion changed).
    pub rewritten: usize,
    /// Objects already stored as the storage version encodes them (nothing written).
    pub unchanged: usize,
    /// `status.storedVersions` before the trim.
    pub stored_before: Vec<String>,
}

/// The `migrate-storage` command for `crd` (e.g. `myapps.example.com`): migrates, then prints what it did.
pub fn migrate_storage(crd: &str, out: &mut impl Write) -> anyhow::Result<()> {
    let migration = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(async {
            let client = Client::try_default().await?;
            migrate(client, crd).await
        })?;
    writeln!(
        out,
        "{crd}: {} objects rewritten at {}, {} already stored so; storedVersions {:?} -> [{:?}]",
        migration.rewritten,
        migration.storage_version,
        migration.unchanged,
        migration.stored_before,
        migration.storage_version,
    )?;
    Ok(())
}

/// Rewrites every object of `crd` at its storage version, then sets `status.storedVersions` to it.
pub async fn migrate(client: Client, crd_name: &str) -> anyhow::Result<Migration> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crds.get(crd_name).await?;
    let storage_version = crd
        .spec
        .versions
        .iter()
        .find(|version| version.storage)
        .map(|version| version.name.clone())
        .ok_or_else(|| anyhow::anyhow!("{crd_name} has no storage version"))?;
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(&crd.spec.group, &storage_version, &crd.spec.names.kind),
        &crd.spec.names.plural,
    );
    wait_for_storage_version(&client, &resource).await?;
    let all: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let mut migration = Migration {
        stored_before: crd
            .status
            .as_ref()
            .and_then(|status| status.stored_versions.clone())
            .unwrap_or_default(),
        storage_version: storage_version.clone(),
        ..Migration::default()
    };
    for object in all.list(&ListParams::default()).await? {
        if rewrite(&client, &resource, object).await? {
            migration.rewritten += 1;
        } else {
            migration.unchanged += 1;
        }
    }
    let trim = json!({"status": {"storedVersions": [storage_version]}});
    crds.patch_status(crd_name, &PatchParams::default(), &Patch::Merge(&trim))
        .await?;
    Ok(migration)
}

/// How long the API server may take to serve a new storage version.
const SWITCH_TIMEOUT: Duration = Duration::from_secs(60);

/// Waits until discovery reports `resource`'s version as its storage version.
pub async fn wait_for_storage_version(
    client: &Client,
    resource: &ApiResource,
) -> anyhow::Result<()> {
    let expected = storage_version_hash(&resource.group, &resource.version, &resource.kind);
    let deadline = tokio::time::Instant::now() + SWITCH_TIMEOUT;
    loop {
        let listed = client
            .list_api_group_resources(&resource.api_version)
            .await?;
        let hash = listed
            .resources
            .iter()
            .find(|r| r.name == resource.plural)
            .and_then(|r| r.storage_version_hash.clone());
        if hash.as_deref() == Some(expected.as_str()) {
            return Ok(());
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the API server did not switch {} to storage version {} within {SWITCH_TIMEOUT:?} \
             (discovery's storageVersionHash is {hash:?}, expected {expected})",
            resource.plural,
            resource.version,
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The API server's `storageVersionHash` of a storage version: the first 8 bytes of the SHA-256 of
/// `group/version/kind`, base64 (k8s.io/apiserver's `StorageVersionHash`).
fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    let digest = Sha256::digest(format!("{group}/{version}/{kind}"));
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

/// Writes `object` back unchanged; on a conflict (someone wrote it meanwhile, and so at the storage
/// version already) reads it again and retries. `false` when it was deleted or nothing was written.
async fn rewrite(
    client: &Client,
    resource: &ApiResource,
    mut object: DynamicObject,
) -> anyhow::Result<bool> {
    let api: Api<DynamicObject> = match object.namespace() {
        Some(namespace) => Api::namespaced_with(client.clone(), &namespace, resource),
        None => Api::all_with(client.clone(), resource),
    };
    let name = object.name_any();
    loop {
        let before = object.resource_version();
        match api.replace(&name, &PostParams::default(), &object).await {
            Ok(written) => return Ok(written.resource_version() != before),
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(false),
            Err(kube::Error::Api(status)) if status.code == 409 => {
                match api.get_opt(&name).await? {
                    Some(fresh) => object = fresh,
                    None => return Ok(false),
                }
            }
            Err(e) => {
                return Err(anyhow::anyhow!(
                    "rewriting {}: {e}; storedVersions left as they were",
                    object
                        .namespace()
                        .map_or(name.clone(), |ns| format!("{ns}/{name}"))
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::storage_version_hash;

    #[test]
    fn the_storage_version_hash_is_the_api_servers() {
        // As discovery reports it for apps/v1 Deployments on a real API server.
        assert_eq!(
            storage_version_hash("apps", "v1", "Deployment"),
            "8aSe+NMegvE="
        );
    }
}
