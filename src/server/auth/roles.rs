//! Running `CREATE/ALTER/DROP ROLE` against the warehouse's role document.
//!
//! A password given in clear text is turned into a SCRAM-SHA-256 verifier here, before it is
//! stored; a password that already is a verifier (psql's `\password` computes it on the
//! client) is stored as given, as PostgreSQL does. Role changes take effect at once, also
//! inside a transaction block (PostgreSQL would undo them at ROLLBACK).

use crate::sql::role::{RoleCommand, RoleOptions};
use crate::storage::roles::{RoleRecord, RoleStore, Roles};

use super::super::error::PgError;
use super::scram::Verifier;

/// What PostgreSQL keeps for `password`: a verifier as given, or the verifier of the text.
fn stored_password(password: &str) -> Result<String, PgError> {
    if Verifier::parse(password).is_some() {
        return Ok(password.to_owned());
    }
    if password.starts_with("SCRAM-SHA-256$") {
        return Err(PgError::new(
            "22023",
            "the password looks like a SCRAM-SHA-256 verifier but is malformed",
        ));
    }
    if password.len() == 35 && password.starts_with("md5") {
        return Err(PgError::new(
            "0A000",
            "MD5 password hashes are not supported: give the password itself, or a \
             SCRAM-SHA-256 verifier",
        ));
    }
    if password.is_empty() {
        return Err(PgError::new(
            "22023",
            "empty password: use PASSWORD NULL for a role without a password",
        ));
    }
    Ok(Verifier::generate(password).to_text())
}

fn set_options(role: &mut RoleRecord, options: &RoleOptions, password: Option<Option<String>>) {
    if let Some(b) = options.login {
        role.login = b;
    }
    if let Some(b) = options.superuser {
        role.superuser = b;
    }
    if let Some(b) = options.create_db {
        role.create_db = b;
    }
    if let Some(b) = options.create_role {
        role.create_role = b;
    }
    if let Some(p) = password {
        role.password = p;
    }
}

fn exists(name: &str) -> PgError {
    PgError::new("42710", format!("role \"{name}\" already exists"))
}

fn missing(name: &str) -> PgError {
    PgError::new("42704", format!("role \"{name}\" does not exist"))
}

/// Runs `command` for the session of `current_user`; returns the command tag and, for
/// `IF [NOT] EXISTS` that skipped a role, a notice with its SQLSTATE.
pub async fn execute(
    store: &RoleStore,
    current_user: &str,
    command: &RoleCommand,
) -> Result<(&'static str, Option<(&'static str, String)>), PgError> {
    // Hash outside the retry loop: a verifier takes 4096 rounds of PBKDF2.
    let password = |options: &RoleOptions| -> Result<Option<Option<String>>, PgError> {
        options
            .password
            .as_ref()
            .map(|p| p.as_deref().map(stored_password).transpose())
            .transpose()
    };
    let mut notice = None;
    let tag = match command {
        RoleCommand::Create {
            name,
            if_not_exists,
            options,
        } => {
            let password = password(options)?;
            let result = store
                .update(|roles: &mut Roles| {
                    if roles.get(name).is_some() {
                        return Err(exists(name));
                    }
                    let mut role = RoleRecord {
                        name: name.clone(),
                        oid: roles.next_oid(),
                        superuser: false,
                        login: false,
                        create_role: false,
                        create_db: false,
                        password: None,
                    };
                    set_options(&mut role, options, password.clone());
                    roles.roles.push(role);
                    Ok::<(), PgError>(())
                })
                .await?;
            match result {
                Ok(_) => {}
                Err(e) if *if_not_exists && e.code == "42710" => {
                    notice = Some(("42710", format!("role \"{name}\" already exists, skipping")));
                }
                Err(e) => return Err(e),
            }
            "CREATE ROLE"
        }
        RoleCommand::Alter { name, options } => {
            let password = password(options)?;
            store
                .update(|roles: &mut Roles| {
                    let role = roles.get_mut(name).ok_or_else(|| missing(name))?;
                    set_options(role, options, password.clone());
                    Ok::<(), PgError>(())
                })
                .await??;
            "ALTER ROLE"
        }
        RoleCommand::Rename { name, to } => {
            if name == current_user {
                return Err(PgError::new(
                    "0A000",
                    "session user cannot be renamed: connect as another role to rename it",
                ));
            }
            store
                .update(|roles: &mut Roles| {
                    if roles.get(to).is_some() {
                        return Err(exists(to));
                    }
                    let role = roles.get_mut(name).ok_or_else(|| missing(name))?;
                    role.name = to.clone();
                    // PostgreSQL clears an MD5 password on rename; SCRAM verifiers do not
                    // depend on the name and stay.
                    Ok::<(), PgError>(())
                })
                .await??;
            "ALTER ROLE"
        }
        RoleCommand::Drop { names, if_exists } => {
            if names.iter().any(|n| n == current_user) {
                return Err(PgError::new(
                    "55006",
                    "current user cannot be dropped: connect as another role to drop it",
                ));
            }
            let mut skipped = Vec::new();
            store
                .update(|roles: &mut Roles| {
                    skipped.clear();
                    for name in names {
                        match roles.roles.iter().position(|r| &r.name == name) {
                            Some(i) => {
                                roles.roles.remove(i);
                            }
                            None if *if_exists => skipped.push(name.clone()),
                            None => return Err(missing(name)),
                        }
                    }
                    Ok::<(), PgError>(())
                })
                .await??;
            if let Some(first) = skipped.first() {
                notice = Some((
                    "00000",
                    format!("role \"{first}\" does not exist, skipping"),
                ));
            }
            "DROP ROLE"
        }
    };
    Ok((tag, notice))
}

/// Creates the superuser `tarn` with `password` if the warehouse has no roles at all.
pub async fn bootstrap(store: &RoleStore, password: &str) -> Result<(), PgError> {
    if !store.load().await?.roles.is_empty() {
        return Ok(());
    }
    let create = RoleCommand::Create {
        name: "tarn".into(),
        if_not_exists: true,
        options: RoleOptions {
            login: Some(true),
            superuser: Some(true),
            create_db: Some(true),
            create_role: Some(true),
            password: Some(Some(password.to_owned())),
        },
    };
    execute(store, "", &create).await.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{Warehouse, WarehouseLocation};

    fn create(name: &str, password: Option<&str>) -> RoleCommand {
        RoleCommand::Create {
            name: name.into(),
            if_not_exists: false,
            options: RoleOptions {
                login: Some(true),
                password: password.map(|p| Some(p.to_owned())),
                ..Default::default()
            },
        }
    }

    #[tokio::test]
    async fn stores_verifiers_never_passwords() {
        let store = RoleStore::new(
            Warehouse::open(&WarehouseLocation::Memory)
                .unwrap()
                .io()
                .clone(),
        );
        execute(&store, "tarn", &create("alice", Some("s3cret")))
            .await
            .unwrap();
        let roles = store.load().await.unwrap();
        let stored = roles.get("alice").unwrap().password.clone().unwrap();
        assert!(!stored.contains("s3cret"));
        assert!(Verifier::parse(&stored).unwrap().matches_password("s3cret"));

        // A verifier is kept as given (psql's \password).
        let given = Verifier::generate("other").to_text();
        let alter = RoleCommand::Alter {
            name: "alice".into(),
            options: RoleOptions {
                password: Some(Some(given.clone())),
                ..Default::default()
            },
        };
        assert_eq!(
            execute(&store, "tarn", &alter).await.unwrap().0,
            "ALTER ROLE"
        );
        let roles = store.load().await.unwrap();
        assert_eq!(
            roles.get("alice").unwrap().password.as_deref(),
            Some(&*given)
        );

        let again = execute(&store, "tarn", &create("alice", None)).await;
        assert_eq!(again.unwrap_err().code, "42710");
        let drop_self = RoleCommand::Drop {
            names: vec!["alice".into()],
            if_exists: false,
        };
        assert_eq!(
            execute(&store, "alice", &drop_self).await.unwrap_err().code,
            "55006"
        );
        execute(&store, "tarn", &drop_self).await.unwrap();
        assert_eq!(
            execute(&store, "tarn", &drop_self).await.unwrap_err().code,
            "42704"
        );
        let md5 = execute(
            &store,
            "tarn",
            &create("bob", Some("md5aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")),
        )
        .await;
        assert_eq!(md5.unwrap_err().code, "0A000");
    }
}
