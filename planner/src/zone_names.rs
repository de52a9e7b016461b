//! Time zone names as PostgreSQL reads them in text: its default abbreviations (fixed
//! offsets, `CET` is +01 in summer too) and the IANA names of the `chrono-tz` database in
//! any case. Shared by `AT TIME ZONE` (the server's `udf::time_zone`) and date and
//! timestamp input ([`crate::datetime_input`]). The abbreviation table is PostgreSQL's
//! `Default` set (its common entries): no library carries it.

use chrono_tz::Tz;
use std::collections::HashMap;
use std::sync::LazyLock;

/// PostgreSQL's default time zone abbreviations (the common ones), each a fixed offset in
/// minutes east of UTC; they win over a zone of the same name, as in PostgreSQL.
static ABBREVIATIONS: LazyLock<HashMap<&'static str, i64>> = LazyLock::new(|| {
    HashMap::from([
        ("utc", 0),
        ("gmt", 0),
        ("z", 0),
        ("zulu", 0),
        ("ut", 0),
        ("wet", 0),
        ("west", 60),
        ("bst", 60),
        ("cet", 60),
        ("cest", 120),
        ("met", 60),
        ("mest", 120),
        ("eet", 120),
        ("eest", 180),
        ("msk", 180),
        ("ist", 120),
        ("est", -300),
        ("edt", -240),
        ("cst", -360),
        ("cdt", -300),
        ("mst", -420),
        ("mdt", -360),
        ("pst", -480),
        ("pdt", -420),
        ("akst", -540),
        ("akdt", -480),
        ("hst", -600),
        ("ast", -240),
        ("adt", -180),
        ("nst", -210),
        ("ndt", -150),
        ("jst", 540),
        ("kst", 540),
        ("hkt", 480),
        ("sgt", 480),
        ("awst", 480),
        ("acst", 570),
        ("acdt", 630),
        ("aest", 600),
        ("aedt", 660),
        ("nzst", 720),
        ("nzdt", 780),
        ("idt", 180),
        ("brt", -180),
        ("brst", -120),
        ("art", -180),
        ("wat", 60),
        ("cat", 120),
        ("eat", 180),
        ("sast", 120),
    ])
});

/// The IANA zone names, by their lower-case spelling.
static NAMES: LazyLock<HashMap<String, Tz>> = LazyLock::new(|| {
    chrono_tz::TZ_VARIANTS
        .iter()
        .map(|tz| (tz.name().to_ascii_lowercase(), *tz))
        .collect()
});

/// The offset in minutes east of UTC of abbreviation `lower` (lower case), if it is one.
pub fn abbreviation_minutes(lower: &str) -> Option<i64> {
    ABBREVIATIONS.get(lower).copied()
}

/// The IANA zone named `lower` (lower case), if there is one.
pub fn iana_zone(lower: &str) -> Option<Tz> {
    NAMES.get(lower).copied()
}
