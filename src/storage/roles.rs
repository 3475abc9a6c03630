//! The server's roles (its users), kept in the warehouse so that every server over it and every
//! restart sees the same ones.
//!
//! PostgreSQL keeps roles in `pg_authid` with a password *verifier*
//! (`SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`), never the password, and so does
//! tarn: this module stores the verifier text it is given and never sees a password. The
//! document is versioned like Paimon's snapshots: `_tarn/roles/roles-<n>.json`, each change
//! written with put-if-absent at the next number, so two servers changing roles at once cannot
//! both win (the loser reads again and retries). The folder name starts with `_`, which Paimon's
//! catalog never uses for a database (`<name>.db`), so other engines ignore it.

use object_store::path::Path;
use serde::{Deserialize, Serialize};

use crate::storage::error::StorageError;
use crate::storage::io::file_io::FileIO;

const ROLES_DIR: &str = "_tarn/roles";
const PREFIX: &str = "roles-";
const SUFFIX: &str = ".json";
/// How many old versions are kept beside the newest (for a reader that listed just before a
/// change); older ones are deleted after a successful change.
const KEEP_VERSIONS: u64 = 8;
/// The first OID handed to a role; PostgreSQL's bootstrap superuser is 10 and user objects
/// start at 16384.
const FIRST_ROLE_OID: u32 = 16_384;

/// One role, as `pg_authid` describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleRecord {
    pub name: String,
    pub oid: u32,
    #[serde(default)]
    pub superuser: bool,
    #[serde(default)]
    pub login: bool,
    #[serde(default)]
    pub create_role: bool,
    #[serde(default)]
    pub create_db: bool,
    /// The SCRAM-SHA-256 verifier, or `None` for a role without a password (which cannot log
    /// in when the server asks for one).
    #[serde(default)]
    pub password: Option<String>,
}

/// One version of the role document.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Roles {
    /// The document's version: the number in its file name (0 when none was written yet).
    #[serde(skip)]
    pub version: u64,
    pub roles: Vec<RoleRecord>,
}

impl Roles {
    pub fn get(&self, name: &str) -> Option<&RoleRecord> {
        self.roles.iter().find(|r| r.name == name)
    }

    pub fn get_mut(&mut self, name: &str) -> Option<&mut RoleRecord> {
        self.roles.iter_mut().find(|r| r.name == name)
    }

    /// An OID no role has.
    pub fn next_oid(&self) -> u32 {
        self.roles
            .iter()
            .map(|r| r.oid + 1)
            .max()
            .unwrap_or(FIRST_ROLE_OID)
            .max(FIRST_ROLE_OID)
    }

    /// Whether any role can log in with a password.
    pub fn any_password_login(&self) -> bool {
        self.roles.iter().any(|r| r.login && r.password.is_some())
    }
}

/// Reads and changes the role document of a warehouse.
#[derive(Debug, Clone)]
pub struct RoleStore {
    io: FileIO,
}

impl RoleStore {
    pub fn new(io: FileIO) -> Self {
        Self { io }
    }

    fn path(&self, version: u64) -> Path {
        self.io
            .path(&format!("{ROLES_DIR}/{PREFIX}{version:020}{SUFFIX}"))
    }

    async fn versions(&self) -> Result<Vec<u64>, StorageError> {
        self.io
            .numbered(&self.io.path(ROLES_DIR), PREFIX, SUFFIX)
            .await
    }

    /// The newest role document (empty when none was written yet).
    pub async fn load(&self) -> Result<Roles, StorageError> {
        let Some(&version) = self.versions().await?.last() else {
            return Ok(Roles::default());
        };
        let bytes = self.io.read(&self.path(version)).await?;
        let mut roles: Roles = serde_json::from_slice(&bytes)
            .map_err(|e| StorageError::Format(format!("role document version {version}: {e}")))?;
        roles.version = version;
        Ok(roles)
    }

    /// Applies `change` to the newest document and writes the result as the next version,
    /// reading again when another writer got there first. `change` may refuse (its error is
    /// returned as is) and may be called more than once.
    pub async fn update<E>(
        &self,
        mut change: impl FnMut(&mut Roles) -> Result<(), E>,
    ) -> Result<Result<Roles, E>, StorageError> {
        loop {
            let mut roles = self.load().await?;
            if let Err(e) = change(&mut roles) {
                return Ok(Err(e));
            }
            let next = roles.version + 1;
            let bytes = serde_json::to_vec_pretty(&roles)
                .map_err(|e| StorageError::internal(format!("role document: {e}")))?;
            if self.io.write_new(&self.path(next), bytes).await? {
                roles.version = next;
                self.prune(next).await;
                return Ok(Ok(roles));
            }
        }
    }

    /// Deletes versions older than the last few; failures only leave files behind.
    async fn prune(&self, newest: u64) {
        let Ok(versions) = self.versions().await else {
            return;
        };
        for v in versions.into_iter().filter(|v| *v + KEEP_VERSIONS < newest) {
            let _ = self.io.delete(&self.path(v)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use object_store::memory::InMemory;

    use super::*;

    fn store() -> RoleStore {
        RoleStore::new(FileIO::new(Arc::new(InMemory::new()), None))
    }

    fn role(name: &str, oid: u32) -> RoleRecord {
        RoleRecord {
            name: name.into(),
            oid,
            superuser: false,
            login: true,
            create_role: false,
            create_db: false,
            password: Some(format!("SCRAM-SHA-256$4096:c2FsdA==${name}:{name}")),
        }
    }

    #[tokio::test]
    async fn versions_advance_and_reload() {
        let store = store();
        assert_eq!(store.load().await.unwrap(), Roles::default());
        let first = store
            .update(|r| -> Result<(), ()> {
                let oid = r.next_oid();
                r.roles.push(role("alice", oid));
                Ok(())
            })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(first.version, 1);
        assert_eq!(first.roles[0].oid, FIRST_ROLE_OID);
        let refused = store
            .update(|_| Err::<(), _>("no"))
            .await
            .unwrap()
            .unwrap_err();
        assert_eq!(refused, "no");
        for i in 0..12 {
            store
                .update(|r| -> Result<(), ()> {
                    let oid = r.next_oid();
                    r.roles.push(role(&format!("r{i}"), oid));
                    Ok(())
                })
                .await
                .unwrap()
                .unwrap();
        }
        let loaded = store.load().await.unwrap();
        assert_eq!(loaded.version, 13);
        assert_eq!(loaded.roles.len(), 13);
        assert_eq!(loaded.get("r11").unwrap().oid, FIRST_ROLE_OID + 12);
        let kept = store.versions().await.unwrap();
        assert_eq!(kept.first(), Some(&(13 - KEEP_VERSIONS)));
    }

    #[tokio::test]
    async fn a_lost_race_reads_again() {
        let store = store();
        let other = store.clone();
        let mut raced = false;
        let out = store
            .update(|r| -> Result<(), ()> {
                if !raced {
                    raced = true;
                    // Another server writes version 1 between our read and our write.
                    futures::executor::block_on(other.update(|o| -> Result<(), ()> {
                        o.roles.push(role("bob", 20_000));
                        Ok(())
                    }))
                    .unwrap()
                    .unwrap();
                }
                let oid = r.next_oid();
                r.roles.push(role("alice", oid));
                Ok(())
            })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(out.version, 2);
        let names: Vec<_> = out.roles.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["bob", "alice"]);
    }
}
