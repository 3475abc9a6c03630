//! Which row changes a table's merge engine can take, as tarn writes them.
//!
//! tarn writes SQL's changes as Paimon row kinds (`+I` new rows, `+U` updated rows, `-D`
//! deleted rows and the old key of a row whose key changes, see `query::dml`); a reader merges
//! every version of a key under the table's merge engine ([`crate::storage::lsm::merge_engine`]). Whether a
//! statement means what it says therefore depends on the engine:
//!
//! - deduplicate: everything (the newest version wins);
//! - partial-update: `+U` rows overwrite the columns they hold a value for — a column set to
//!   NULL keeps its value (Paimon's semantics) — unless a column aggregates; `-D` needs
//!   `ignore-delete` (then it is ignored) or `partial-update.remove-record-on-delete`;
//! - aggregation: an updated row would be aggregated with the old one, so no updates; a `-D`
//!   takes the row's values back out of the aggregates where every function can (Paimon's
//!   retraction: the key stays), or removes the row with `aggregation.remove-record-on-delete`;
//! - first-row: the first version stays, so updates would never be seen; deletes only with
//!   `ignore-delete` (then ignored).
//!
//! Anything else is refused before a row is written rather than left to fail later reads.

use crate::storage::lsm::merge_engine::{AggFunc, MergeEngine, MergeOptions};
use crate::storage::spec::options::merge::keys;

/// What a statement does to rows that exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmlWhat {
    /// Rows changed in place (`+U`): UPDATE, ON CONFLICT DO UPDATE, MERGE ... UPDATE.
    Update,
    /// Rows deleted (`-D`): DELETE, MERGE ... DELETE.
    Delete,
    /// An update that may change a row's primary key: `-D` of the old key, `+I` of the new.
    MoveKey,
}

/// Whether `INSERT … ON CONFLICT (pk) DO UPDATE` setting every non-key column from
/// `EXCLUDED` (no WHERE) can be written blind, as UPSERT writes: the newest version of a key is
/// the whole row (plain deduplicate), so the old row needs no read, and no changelog tells an
/// update (`+U`) from an insert (`+I`).
pub fn upsert_replaces(
    options: &MergeOptions,
    schema: &crate::storage::spec::schema::TableSchema,
) -> bool {
    options.is_plain() && !crate::storage::write::changelog::has_changelog(schema)
}

/// Whether a plain INSERT of an existing key merges into it (no unique violation): every engine
/// but plain deduplicate, where an INSERT of an existing key is an error as in PostgreSQL.
pub fn insert_merges(options: &MergeOptions) -> bool {
    options.engine != MergeEngine::Deduplicate || !options.sequence_fields.is_empty()
}

fn engine_name(options: &MergeOptions) -> &'static str {
    match options.engine {
        MergeEngine::Deduplicate => "deduplicate",
        MergeEngine::FirstRow => "first-row",
        MergeEngine::PartialUpdate => "partial-update",
        MergeEngine::Aggregation => "aggregation",
    }
}

/// Whether tarn can write `what` to a table with these merge options, or why not (a message
/// that names the option to set, where one would help).
pub fn dml_support(options: &MergeOptions, what: DmlWhat) -> Result<(), String> {
    match what {
        DmlWhat::Update => update_support(options),
        DmlWhat::Delete => delete_support(options),
        DmlWhat::MoveKey => {
            update_support(options)?;
            delete_support(options).map_err(|reason| {
                format!("changing a primary-key column deletes the old key, and {reason}")
            })?;
            if !options.sequence_fields.is_empty() && !options.ignore_delete {
                return Err(format!(
                    "changing a primary-key column writes a delete of the old key that carries \
                     the new row's values, and with sequence.field ({}) that delete can be \
                     ordered before the old row and not take effect",
                    options.sequence_fields.join(", ")
                ));
            }
            Ok(())
        }
    }
}

fn update_support(options: &MergeOptions) -> Result<(), String> {
    match options.engine {
        MergeEngine::Deduplicate => Ok(()),
        MergeEngine::FirstRow => Err(
            "merge-engine first-row keeps the first version of each key, so an updated row \
             would never be seen"
                .to_owned(),
        ),
        MergeEngine::Aggregation => Err(
            "merge-engine aggregation would aggregate the updated row with the old one (a sum \
             would add the new value to the old sum) instead of replacing it"
                .to_owned(),
        ),
        MergeEngine::PartialUpdate => {
            for (column, agg) in options.aggregates() {
                if !matches!(
                    agg.func,
                    AggFunc::PrimaryKey | AggFunc::LastNonNullValue | AggFunc::LastValue
                ) {
                    return Err(format!(
                        "column \"{column}\" aggregates with {}, so the updated row would be \
                         aggregated with the old one instead of replacing it",
                        agg.func.name()
                    ));
                }
            }
            Ok(())
        }
    }
}

fn delete_support(options: &MergeOptions) -> Result<(), String> {
    if options.ignore_delete {
        return Ok(()); // every engine ignores the deletes (see `dml_notice`)
    }
    let engine = engine_name(options);
    match options.engine {
        MergeEngine::Deduplicate => Ok(()),
        MergeEngine::FirstRow => Err(format!(
            "merge-engine first-row cannot take deletes (Paimon refuses them); with '{}' = \
             'true' they are accepted and ignored",
            keys::IGNORE_DELETE
        )),
        MergeEngine::PartialUpdate if options.has_sequence_groups() => Err(format!(
            "on a partial-update table with sequence groups a delete only clears the columns of \
             the groups it is newer for, which tarn does not write; set '{}' = 'true' to accept \
             and ignore deletes",
            keys::IGNORE_DELETE
        )),
        MergeEngine::PartialUpdate if options.remove_record_on_delete => Ok(()),
        MergeEngine::PartialUpdate => Err(format!(
            "merge-engine {engine} cannot take deletes unless '{}' = 'true' (deletes remove the \
             row) or '{}' = 'true' (deletes are ignored)",
            keys::PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE,
            keys::IGNORE_DELETE
        )),
        MergeEngine::Aggregation if options.remove_record_on_delete => Ok(()),
        MergeEngine::Aggregation => {
            for (column, agg) in options.aggregates() {
                if agg.ignore_retract {
                    continue;
                }
                let why = match agg.func {
                    AggFunc::Product => Some(
                        "taking a product back divides by it, which fails later reads when it \
                         is 0",
                    ),
                    f if f.can_retract() => None,
                    _ => Some("Paimon cannot take its values back out of the aggregate"),
                };
                if let Some(why) = why {
                    return Err(format!(
                        "column \"{column}\" aggregates with {}: {why}; set '{}' = 'true' \
                         (deletes remove the row) or 'fields.{column}.{}' = 'true'",
                        agg.func.name(),
                        keys::AGGREGATION_REMOVE_RECORD_ON_DELETE,
                        keys::IGNORE_RETRACT
                    ));
                }
            }
            Ok(())
        }
    }
}

/// What a client should be told when `what` runs on such a table (it does not do what it would
/// do in PostgreSQL), if anything: words that follow `table "<name>"`.
pub fn dml_notice(options: &MergeOptions, what: DmlWhat) -> Option<String> {
    if what == DmlWhat::Update {
        return None;
    }
    let rows = if what == DmlWhat::Delete {
        "the deleted rows"
    } else {
        "the old keys of rows whose key changes"
    };
    if options.ignore_delete {
        return Some(format!(
            "has '{}' = 'true': Paimon ignores deletes on it, so {rows} stay",
            keys::IGNORE_DELETE
        ));
    }
    if options.engine == MergeEngine::Aggregation && !options.remove_record_on_delete {
        return Some(format!(
            "is an aggregation table: a delete takes the row's values back out of its aggregates \
             (sums are reduced, last values cleared) and the key stays; set '{}' = 'true' to \
             remove {rows}",
            keys::AGGREGATION_REMOVE_RECORD_ON_DELETE
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::spec::types::{PaimonType, TypeKind};

    fn options(columns: &[(&str, TypeKind)], opts: &[(&str, &str)]) -> MergeOptions {
        let columns: Vec<(&str, PaimonType)> = columns
            .iter()
            .map(|(n, t)| (*n, PaimonType::nullable(t.clone())))
            .collect();
        let schema = crate::storage::testkit::keyed_schema(&columns, opts);
        MergeOptions::from_schema(&schema).unwrap()
    }

    fn int() -> TypeKind {
        TypeKind::Int
    }

    fn all(o: &MergeOptions) -> [Result<(), String>; 3] {
        [
            dml_support(o, DmlWhat::Update),
            dml_support(o, DmlWhat::Delete),
            dml_support(o, DmlWhat::MoveKey),
        ]
    }

    #[test]
    fn deduplicate_takes_everything() {
        let o = options(&[("v", int())], &[]);
        assert!(!insert_merges(&o));
        assert!(all(&o).iter().all(Result::is_ok));
        assert_eq!(dml_notice(&o, DmlWhat::Delete), None);
        let ignoring = options(&[("v", int())], &[("ignore-delete", "true")]);
        assert!(!insert_merges(&ignoring));
        assert!(all(&ignoring).iter().all(Result::is_ok));
        assert!(
            dml_notice(&ignoring, DmlWhat::Delete)
                .unwrap()
                .contains("ignore-delete")
        );
    }

    #[test]
    fn sequence_field_merges_inserts_and_refuses_key_moves() {
        let o = options(&[("ts", int())], &[("sequence.field", "ts")]);
        assert!(insert_merges(&o));
        assert!(dml_support(&o, DmlWhat::Update).is_ok());
        assert!(dml_support(&o, DmlWhat::Delete).is_ok());
        let err = dml_support(&o, DmlWhat::MoveKey).unwrap_err();
        assert!(err.contains("sequence.field"), "{err}");
    }

    #[test]
    fn partial_update_updates_and_deletes_need_an_option() {
        let o = options(&[("v", int())], &[("merge-engine", "partial-update")]);
        assert!(insert_merges(&o));
        assert!(dml_support(&o, DmlWhat::Update).is_ok());
        let err = dml_support(&o, DmlWhat::Delete).unwrap_err();
        assert!(
            err.contains("partial-update.remove-record-on-delete") && err.contains("ignore-delete"),
            "{err}"
        );
        assert!(dml_support(&o, DmlWhat::MoveKey).is_err());

        let remove = options(
            &[("v", int())],
            &[
                ("merge-engine", "partial-update"),
                ("partial-update.remove-record-on-delete", "true"),
            ],
        );
        assert!(all(&remove).iter().all(Result::is_ok));
        assert_eq!(dml_notice(&remove, DmlWhat::Delete), None);

        let ignore = options(
            &[("v", int())],
            &[
                ("merge-engine", "partial-update"),
                ("partial-update.ignore-delete", "true"),
            ],
        );
        assert!(all(&ignore).iter().all(Result::is_ok));
        assert!(dml_notice(&ignore, DmlWhat::Delete).is_some());
        assert!(dml_notice(&ignore, DmlWhat::MoveKey).is_some());
        assert_eq!(dml_notice(&ignore, DmlWhat::Update), None);
    }

    #[test]
    fn partial_update_with_groups_and_aggregates() {
        let grouped = [
            ("merge-engine", "partial-update"),
            ("fields.g.sequence-group", "a,c"),
            ("fields.c.aggregate-function", "sum"),
        ];
        let cols = [("a", int()), ("c", int()), ("g", int())];
        let o = options(&cols, &grouped);
        let err = dml_support(&o, DmlWhat::Update).unwrap_err();
        assert!(err.contains("\"c\" aggregates with sum"), "{err}");
        let err = dml_support(&o, DmlWhat::Delete).unwrap_err();
        assert!(err.contains("sequence groups"), "{err}");
        let plain_groups = options(
            &cols,
            &[
                ("merge-engine", "partial-update"),
                ("fields.g.sequence-group", "a,c"),
            ],
        );
        assert!(dml_support(&plain_groups, DmlWhat::Update).is_ok());
        let mut ignoring = grouped.to_vec();
        ignoring.push(("ignore-delete", "true"));
        assert!(dml_support(&options(&cols, &ignoring), DmlWhat::Delete).is_ok());
    }

    #[test]
    fn aggregation_refuses_updates_and_retracts_where_it_can() {
        let retractable = options(
            &[("s", int()), ("l", int()), ("n", int())],
            &[
                ("merge-engine", "aggregation"),
                ("fields.s.aggregate-function", "sum"),
                ("fields.l.aggregate-function", "last_value"),
            ],
        );
        assert!(insert_merges(&retractable));
        let err = dml_support(&retractable, DmlWhat::Update).unwrap_err();
        assert!(err.contains("aggregate the updated row"), "{err}");
        assert!(dml_support(&retractable, DmlWhat::MoveKey).is_err());
        assert!(dml_support(&retractable, DmlWhat::Delete).is_ok());
        assert!(
            dml_notice(&retractable, DmlWhat::Delete)
                .unwrap()
                .contains("aggregation.remove-record-on-delete")
        );

        for func in ["max", "min", "listagg", "first_value", "product", "bool_or"] {
            let ty = match func {
                "listagg" => TypeKind::VarChar(crate::storage::spec::types::MAX_LENGTH),
                "bool_or" => TypeKind::Boolean,
                _ => int(),
            };
            let key = "fields.m.aggregate-function";
            let o = options(
                &[("m", ty.clone())],
                &[("merge-engine", "aggregation"), (key, func)],
            );
            let err = dml_support(&o, DmlWhat::Delete).unwrap_err();
            assert!(
                err.contains(&format!("aggregates with {func}"))
                    && err.contains("aggregation.remove-record-on-delete")
                    && err.contains("fields.m.ignore-retract"),
                "{func}: {err}"
            );
            let removing = options(
                &[("m", ty.clone())],
                &[
                    ("merge-engine", "aggregation"),
                    (key, func),
                    ("aggregation.remove-record-on-delete", "true"),
                ],
            );
            assert!(dml_support(&removing, DmlWhat::Delete).is_ok(), "{func}");
            assert_eq!(dml_notice(&removing, DmlWhat::Delete), None);
            let ignoring = options(
                &[("m", ty)],
                &[
                    ("merge-engine", "aggregation"),
                    (key, func),
                    ("fields.m.ignore-retract", "true"),
                ],
            );
            assert!(dml_support(&ignoring, DmlWhat::Delete).is_ok(), "{func}");
        }
    }

    #[test]
    fn first_row_keeps_the_first_version() {
        let o = options(&[("v", int())], &[("merge-engine", "first-row")]);
        assert!(insert_merges(&o));
        let [update, delete, moved] = all(&o);
        assert!(update.unwrap_err().contains("never be seen"));
        assert!(delete.unwrap_err().contains("ignore-delete"));
        assert!(moved.is_err());
        let ignoring = options(
            &[("v", int())],
            &[("merge-engine", "first-row"), ("ignore-delete", "true")],
        );
        assert!(dml_support(&ignoring, DmlWhat::Update).is_err());
        assert!(dml_support(&ignoring, DmlWhat::Delete).is_ok());
        assert!(dml_notice(&ignoring, DmlWhat::Delete).is_some());
    }
}
