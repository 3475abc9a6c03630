//! The PostgreSQL type of a Paimon column as the catalogs describe it: type OID, `atttypmod`,
//! storage facts (`attlen`, `attbyval`, `attalign`, `attstorage`) and the SQL-standard names
//! `information_schema.columns` reports.
//!
//! The mapping is the one tarn's wire layer uses for values (`pg_types.rs`, arrow-pg), with
//! the modifiers PostgreSQL keeps in `atttypmod`: `varchar(n)`/`bpchar(n)` as n + 4,
//! `numeric(p, s)` as ((p << 16) | s) + 4, `time(p)`/`timestamp(p)` as p (PostgreSQL's default
//! precision 6 as -1, as PostgreSQL stores an unspecified precision).

use crate::storage::spec::types::{MAX_LENGTH, PaimonType, TypeKind};

/// A column's type as `pg_attribute` and `information_schema.columns` describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnType {
    pub oid: i32,
    pub typmod: i32,
    pub len: i16,
    pub byval: bool,
    pub align: &'static str,
    pub storage: &'static str,
    /// 1 for arrays, else 0.
    pub ndims: i32,
    /// `pg_type.typname` (`information_schema.columns.udt_name`).
    pub typname: &'static str,
    /// `information_schema.columns.data_type`.
    pub sql_name: &'static str,
}

impl ColumnType {
    fn scalar(
        oid: i32,
        typname: &'static str,
        sql_name: &'static str,
        len: i16,
        align: &'static str,
    ) -> Self {
        let byval = len > 0 && len <= 8;
        Self {
            oid,
            typmod: -1,
            len,
            byval,
            align,
            storage: if len > 0 { "p" } else { "x" },
            ndims: 0,
            typname,
            sql_name,
        }
    }

    fn with_typmod(mut self, typmod: i32) -> Self {
        self.typmod = typmod;
        self
    }

    /// `character_maximum_length`.
    pub fn char_max_length(&self) -> Option<i32> {
        match self.oid {
            1042 | 1043 if self.typmod >= 4 => Some(self.typmod - 4),
            _ => None,
        }
    }

    /// `character_octet_length` (PostgreSQL: 4 bytes per character, at most 1 GB).
    pub fn char_octet_length(&self) -> Option<i32> {
        match self.oid {
            25 | 1042 | 1043 => Some(
                self.char_max_length()
                    .map_or(1_073_741_824, |n| (n * 4).min(1_073_741_824)),
            ),
            _ => None,
        }
    }

    /// `numeric_precision`, `numeric_precision_radix`, `numeric_scale`.
    pub fn numeric(&self) -> (Option<i32>, Option<i32>, Option<i32>) {
        match self.oid {
            21 => (Some(16), Some(2), Some(0)),
            23 => (Some(32), Some(2), Some(0)),
            20 => (Some(64), Some(2), Some(0)),
            700 => (Some(24), Some(2), None),
            701 => (Some(53), Some(2), None),
            1700 if self.typmod >= 4 => {
                let m = self.typmod - 4;
                (Some((m >> 16) & 0xffff), Some(10), Some(m & 0xffff))
            }
            1700 => (None, Some(10), None),
            _ => (None, None, None),
        }
    }

    /// `datetime_precision`.
    pub fn datetime_precision(&self) -> Option<i32> {
        match self.oid {
            1082 => Some(0),
            1083 | 1114 | 1184 => Some(if self.typmod >= 0 { self.typmod } else { 6 }),
            _ => None,
        }
    }
}

/// The PostgreSQL type of a column of Paimon type `ty`; `hint` is tarn's type hint of the
/// column (`uuid`, `json`, `jsonb`: stored as strings).
pub fn column_type(ty: &PaimonType, hint: Option<&str>) -> ColumnType {
    match hint {
        Some("uuid") => return ColumnType::scalar(2950, "uuid", "uuid", 16, "c"),
        Some("json") => return ColumnType::scalar(114, "json", "json", -1, "i"),
        Some("jsonb") => return ColumnType::scalar(3802, "jsonb", "jsonb", -1, "i"),
        _ => {}
    }
    let precision = |p: u8| if p >= 6 { -1 } else { i32::from(p) };
    match &ty.kind {
        TypeKind::Boolean => ColumnType::scalar(16, "bool", "boolean", 1, "c"),
        TypeKind::TinyInt | TypeKind::SmallInt => {
            ColumnType::scalar(21, "int2", "smallint", 2, "s")
        }
        TypeKind::Int => ColumnType::scalar(23, "int4", "integer", 4, "i"),
        TypeKind::BigInt => ColumnType::scalar(20, "int8", "bigint", 8, "d"),
        TypeKind::Float => ColumnType::scalar(700, "float4", "real", 4, "i"),
        TypeKind::Double => ColumnType::scalar(701, "float8", "double precision", 8, "d"),
        TypeKind::Decimal { precision, scale } => {
            let mut t = ColumnType::scalar(1700, "numeric", "numeric", -1, "i");
            t.storage = "m";
            t.with_typmod(((i32::from(*precision) << 16) | i32::from(*scale)) + 4)
        }
        TypeKind::Char(n) => {
            ColumnType::scalar(1042, "bpchar", "character", -1, "i").with_typmod(*n as i32 + 4)
        }
        TypeKind::VarChar(n) if *n < MAX_LENGTH => {
            ColumnType::scalar(1043, "varchar", "character varying", -1, "i")
                .with_typmod(*n as i32 + 4)
        }
        TypeKind::VarChar(_) => ColumnType::scalar(25, "text", "text", -1, "i"),
        TypeKind::Binary(_) | TypeKind::VarBinary(_) => {
            ColumnType::scalar(17, "bytea", "bytea", -1, "i")
        }
        TypeKind::Date => ColumnType::scalar(1082, "date", "date", 4, "i"),
        TypeKind::Time(p) => ColumnType::scalar(1083, "time", "time without time zone", 8, "d")
            .with_typmod(precision(*p)),
        TypeKind::Timestamp(p) => {
            ColumnType::scalar(1114, "timestamp", "timestamp without time zone", 8, "d")
                .with_typmod(precision(*p))
        }
        TypeKind::TimestampLtz(p) => {
            ColumnType::scalar(1184, "timestamptz", "timestamp with time zone", 8, "d")
                .with_typmod(precision(*p))
        }
        TypeKind::Array(inner) => {
            let element = column_type(inner, None);
            let (oid, typname) = array_of(element.oid);
            ColumnType {
                oid,
                typmod: element.typmod,
                len: -1,
                byval: false,
                align: if element.align == "d" { "d" } else { "i" },
                storage: "x",
                ndims: 1,
                typname,
                sql_name: "ARRAY",
            }
        }
        // No PostgreSQL counterpart (maps, rows, multisets, types tarn cannot read): shown as
        // text, the way tarn renders their values.
        _ => ColumnType::scalar(25, "text", "text", -1, "i"),
    }
}

/// The type of a column whose PostgreSQL type is known by OID and `atttypmod` (a view's
/// columns, typed when CREATE VIEW planned its query); text for a type tarn does not name.
pub fn column_type_of_oid(oid: i32, typmod: i32) -> ColumnType {
    let of = |kind: TypeKind| column_type(&PaimonType::nullable(kind), None);
    let precision = |p: i32| if p >= 0 { p.min(9) as u8 } else { 6 };
    match oid {
        16 => of(TypeKind::Boolean),
        21 => of(TypeKind::SmallInt),
        23 => of(TypeKind::Int),
        20 => of(TypeKind::BigInt),
        700 => of(TypeKind::Float),
        701 => of(TypeKind::Double),
        1700 => {
            let mut t = ColumnType::scalar(1700, "numeric", "numeric", -1, "i");
            t.storage = "m";
            t.with_typmod(typmod)
        }
        1042 => ColumnType::scalar(1042, "bpchar", "character", -1, "i").with_typmod(typmod),
        1043 => {
            ColumnType::scalar(1043, "varchar", "character varying", -1, "i").with_typmod(typmod)
        }
        17 => of(TypeKind::VarBinary(0)),
        1082 => of(TypeKind::Date),
        1083 => of(TypeKind::Time(precision(typmod))),
        1114 => of(TypeKind::Timestamp(precision(typmod))),
        1184 => of(TypeKind::TimestampLtz(precision(typmod))),
        2950 => column_type(
            &PaimonType::nullable(TypeKind::VarChar(MAX_LENGTH)),
            Some("uuid"),
        ),
        114 => column_type(
            &PaimonType::nullable(TypeKind::VarChar(MAX_LENGTH)),
            Some("json"),
        ),
        3802 => column_type(
            &PaimonType::nullable(TypeKind::VarChar(MAX_LENGTH)),
            Some("jsonb"),
        ),
        1186 => ColumnType::scalar(1186, "interval", "interval", 16, "d"),
        26 => ColumnType::scalar(26, "oid", "oid", 4, "i"),
        19 => ColumnType::scalar(19, "name", "name", 64, "c"),
        _ => {
            let element = [
                16, 17, 20, 21, 23, 25, 114, 700, 701, 1042, 1043, 1082, 1083, 1114, 1184, 1700,
                2950, 3802,
            ]
            .into_iter()
            .find(|e| array_of(*e).0 == oid);
            match element {
                Some(e) => {
                    let element = column_type_of_oid(e, typmod);
                    let (oid, typname) = array_of(e);
                    ColumnType {
                        oid,
                        typmod: element.typmod,
                        len: -1,
                        byval: false,
                        align: if element.align == "d" { "d" } else { "i" },
                        storage: "x",
                        ndims: 1,
                        typname,
                        sql_name: "ARRAY",
                    }
                }
                None => ColumnType::scalar(25, "text", "text", -1, "i"),
            }
        }
    }
}

/// The array type of element type `oid` (PostgreSQL's `typarray`), `text[]` if unknown.
fn array_of(oid: i32) -> (i32, &'static str) {
    match oid {
        16 => (1000, "_bool"),
        17 => (1001, "_bytea"),
        20 => (1016, "_int8"),
        21 => (1005, "_int2"),
        23 => (1007, "_int4"),
        25 => (1009, "_text"),
        114 => (199, "_json"),
        700 => (1021, "_float4"),
        701 => (1022, "_float8"),
        1042 => (1014, "_bpchar"),
        1043 => (1015, "_varchar"),
        1082 => (1182, "_date"),
        1083 => (1183, "_time"),
        1114 => (1115, "_timestamp"),
        1184 => (1185, "_timestamptz"),
        1700 => (1231, "_numeric"),
        2950 => (2951, "_uuid"),
        3802 => (3807, "_jsonb"),
        _ => (1009, "_text"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(kind: TypeKind) -> ColumnType {
        column_type(&PaimonType::new(kind, true), None)
    }

    #[test]
    fn types_by_oid_match_types_by_paimon_type() {
        for kind in [
            TypeKind::Boolean,
            TypeKind::Int,
            TypeKind::BigInt,
            TypeKind::Double,
            TypeKind::Date,
            TypeKind::Timestamp(6),
            TypeKind::TimestampLtz(3),
            TypeKind::Decimal {
                precision: 6,
                scale: 2,
            },
            TypeKind::VarChar(20),
            TypeKind::Char(3),
            TypeKind::VarChar(MAX_LENGTH),
            TypeKind::Array(Box::new(PaimonType::new(TypeKind::Int, true))),
        ] {
            let t = of(kind);
            assert_eq!(column_type_of_oid(t.oid, t.typmod), t);
        }
        assert_eq!(column_type_of_oid(1186, -1).typname, "interval");
        assert_eq!(column_type_of_oid(123_456, -1).oid, 25);
    }

    #[test]
    fn typmods_are_postgres_encodings() {
        let n = of(TypeKind::Decimal {
            precision: 6,
            scale: 2,
        });
        assert_eq!((n.oid, n.typmod), (1700, 393_222));
        assert_eq!(n.numeric(), (Some(6), Some(10), Some(2)));
        let v = of(TypeKind::VarChar(20));
        assert_eq!((v.oid, v.typmod, v.char_max_length()), (1043, 24, Some(20)));
        assert_eq!(of(TypeKind::VarChar(MAX_LENGTH)).oid, 25);
        assert_eq!(of(TypeKind::Timestamp(6)).typmod, -1);
        assert_eq!(of(TypeKind::Timestamp(3)).typmod, 3);
        let a = of(TypeKind::Array(Box::new(PaimonType::new(
            TypeKind::Int,
            true,
        ))));
        assert_eq!((a.oid, a.ndims, a.typname), (1007, 1, "_int4"));
    }
}
