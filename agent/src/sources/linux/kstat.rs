//! Pure parsers for the text the SPL kstat layer prints: bytes in, typed value out, no I/O.
//!
//! The formats are those of `module/os/linux/spl/spl-kstat.c` and `spl-procfs-list.c`
//! (docs/zfs-sources.md, "Kstat text"). They are kept generic because the FreeBSD reader feeds the text
//! sysctls (`kstat.zfs.<pool>.txgs`, `kstat.zfs.<pool>.misc.io`, `…misc.state`) through the
//! same functions: FreeBSD prints no kstat header, starts procfs_list text with a newline and
//! trims the trailing one, so every parser here takes the header and blank lines as optional.
//!
//! Inputs may be captures from anywhere, so nothing here panics or wraps: a malformed line is
//! a [`ParseError`] carrying its 1-based line number.

use crate::sources::ParseError;
use zpulse_proto::snapshot::{Kstat, KstatHeader, KstatValue, PoolIo, Txg};

/// `KSTAT_TYPE_NAMED`, as printed in the second header field.
const KSTAT_TYPE_NAMED: u32 = 1;
/// `KSTAT_TYPE_IO`.
const KSTAT_TYPE_IO: u32 = 3;

/// The column order of a KSTAT_TYPE_IO line; FreeBSD prints the values without this header.
const IO_COLUMNS: [&str; 12] = [
    "nread", "nwritten", "reads", "writes", "wtime", "wlentime", "wupdate", "rtime", "rlentime",
    "rupdate", "wcnt", "rcnt",
];

/// A NAMED kstat: `arcstats`, `zil`, `<pool>/iostats`, `<pool>/objset-0x…`,
/// `<pool>/dmu_tx_assign`, and every other `name type data` file.
///
/// The seven-field header line is optional (kstats created with `KSTAT_FLAG_NO_HEADERS`, or
/// text that lost it), and so is the `name type data` column line. An empty input is an empty
/// kstat, not an error: a 2.1 `dmu_tx_assign` was captured as 0 bytes in the lab. The header's
/// `ndata` is not enforced; it is kept in [`Kstat::header`] for callers that want to compare.
pub fn parse_named(bytes: &[u8]) -> Result<Kstat, ParseError> {
    const WHAT: &str = "kstat";
    let mut kstat = Kstat::default();
    // The rows, then the map built from them in one go: the kernel lists them in its own
    // order (arcstats: `hits`, `misses`, …), and inserting ~250 names one by one into a
    // sorted map cost more than sorting them once. A name given twice keeps its last value,
    // as an insert would.
    let mut rows = Vec::new();
    // Until the first data row, the header and then the column line may still appear.
    let mut expect_header = true;
    let mut expect_columns = true;
    for (n, line) in lines(bytes, WHAT) {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        if expect_header {
            expect_header = false;
            if let Some(header) = parse_header(line, n, WHAT)? {
                if header.kstat_type != KSTAT_TYPE_NAMED {
                    return Err(ParseError::new(
                        WHAT,
                        format!(
                            "kstat type {} ({}) is not NAMED (1)",
                            header.kstat_type,
                            type_name(header.kstat_type)
                        ),
                    )
                    .at_line(n));
                }
                kstat.header = Some(header);
                continue;
            }
        }
        if expect_columns {
            expect_columns = false;
            if line.split_ascii_whitespace().eq(["name", "type", "data"]) {
                continue;
            }
        }
        rows.push(parse_named_row(line, n)?);
    }
    kstat.fields = rows.into_iter().collect();
    Ok(kstat)
}

/// `<pool>/txgs`: the transaction-group history, oldest first.
///
/// Accepts the procfs_list form (column header, then rows; 0.8+), the 0.7 form (a kstat header
/// line first) and the FreeBSD sysctl text (a leading newline). Columns are matched by name so
/// that a future column does not shift the others; `txg`, `birth` and `state` are required,
/// and a counter column the header lacks reads as 0.
pub fn parse_txgs(bytes: &[u8]) -> Result<Vec<Txg>, ParseError> {
    const WHAT: &str = "txgs";
    let mut columns: Option<Vec<TxgColumn>> = None;
    let mut header_allowed = true;
    let mut txgs = Vec::new();
    for (n, line) in lines(bytes, WHAT) {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let Some(cols) = &columns else {
            if std::mem::take(&mut header_allowed) && parse_header(line, n, WHAT)?.is_some() {
                continue;
            }
            columns = Some(txg_columns(line, n)?);
            continue;
        };
        // The fields matched to the columns as they are met, in one pass (no list of them
        // per row: a row is a dozen numbers, and collecting them cost more than parsing them).
        let mut fields = token_spans(line).map(|(s, e)| &line[s..e]);
        let mut txg = Txg::default();
        for col in cols {
            let Some(token) = fields.next() else {
                return Err(wrong_field_count(line, cols.len(), n));
            };
            let slot = match col {
                TxgColumn::State => {
                    txg.state = token.to_string();
                    continue;
                }
                TxgColumn::Other => continue,
                TxgColumn::Txg => &mut txg.txg,
                TxgColumn::Birth => &mut txg.birth,
                TxgColumn::Ndirty => &mut txg.ndirty,
                TxgColumn::Nread => &mut txg.nread,
                TxgColumn::Nwritten => &mut txg.nwritten,
                TxgColumn::Reads => &mut txg.reads,
                TxgColumn::Writes => &mut txg.writes,
                TxgColumn::Otime => &mut txg.otime,
                TxgColumn::Qtime => &mut txg.qtime,
                TxgColumn::Wtime => &mut txg.wtime,
                TxgColumn::Stime => &mut txg.stime,
            };
            *slot = unsigned(token).map_err(|m| ParseError::new(WHAT, m).at_line(n))?;
        }
        if fields.next().is_some() {
            return Err(wrong_field_count(line, cols.len(), n));
        }
        txgs.push(txg);
    }
    Ok(txgs)
}

/// A `txgs` row whose fields are not one per column.
fn wrong_field_count(line: &str, columns: usize, n: usize) -> ParseError {
    let count = token_spans(line).count();
    ParseError::new(
        "txgs",
        format!("{count} fields where the column header has {columns}"),
    )
    .at_line(n)
}

/// The pre-2.1 pool `io` kstat (KSTAT_TYPE_IO): optional kstat header, optional column
/// header, then exactly one line of twelve numbers.
pub fn parse_pool_io(bytes: &[u8]) -> Result<PoolIo, ParseError> {
    const WHAT: &str = "pool io";
    let mut header_allowed = true;
    let mut columns: Option<Vec<&str>> = None;
    let mut io: Option<PoolIo> = None;
    for (n, line) in lines(bytes, WHAT) {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        if std::mem::take(&mut header_allowed)
            && let Some(header) = parse_header(line, n, WHAT)?
        {
            if header.kstat_type != KSTAT_TYPE_IO {
                return Err(ParseError::new(
                    WHAT,
                    format!(
                        "kstat type {} ({}) is not IO (3)",
                        header.kstat_type,
                        type_name(header.kstat_type)
                    ),
                )
                .at_line(n));
            }
            continue;
        }
        if io.is_some() {
            return Err(ParseError::new(WHAT, "more than one data line").at_line(n));
        }
        let tokens: Vec<&str> = line.split_ascii_whitespace().collect();
        let starts_with_number = tokens
            .first()
            .is_some_and(|t| t.bytes().all(|b| b.is_ascii_digit()));
        if columns.is_none() && !starts_with_number {
            if let Some(missing) = IO_COLUMNS.iter().find(|c| !tokens.contains(*c)) {
                return Err(
                    ParseError::new(WHAT, format!("column header lacks `{missing}`")).at_line(n),
                );
            }
            columns = Some(tokens);
            continue;
        }
        let cols: &[&str] = columns.as_deref().unwrap_or(&IO_COLUMNS);
        if tokens.len() != cols.len() {
            return Err(ParseError::new(
                WHAT,
                format!("{} fields, expected {}", tokens.len(), cols.len()),
            )
            .at_line(n));
        }
        let mut value = PoolIo::default();
        for (col, token) in cols.iter().zip(&tokens) {
            let slot = match *col {
                "nread" => &mut value.nread,
                "nwritten" => &mut value.nwritten,
                "reads" => &mut value.reads,
                "writes" => &mut value.writes,
                "wtime" => &mut value.wtime,
                "wlentime" => &mut value.wlentime,
                "wupdate" => &mut value.wupdate,
                "rtime" => &mut value.rtime,
                "rlentime" => &mut value.rlentime,
                "rupdate" => &mut value.rupdate,
                "wcnt" => &mut value.wcnt,
                "rcnt" => &mut value.rcnt,
                _ => continue,
            };
            *slot = unsigned(token).map_err(|m| ParseError::new(WHAT, m).at_line(n))?;
        }
        io = Some(value);
    }
    io.ok_or_else(|| ParseError::new(WHAT, "no data line"))
}

/// `<pool>/state`: one word such as `ONLINE` or `SUSPENDED`.
pub fn parse_state(bytes: &[u8]) -> Result<String, ParseError> {
    const WHAT: &str = "pool state";
    let text = one_line(bytes, WHAT)?;
    if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(ParseError::new(
            WHAT,
            format!("`{}` is not a single word", text.escape_debug()),
        ));
    }
    Ok(text.to_string())
}

/// `<pool>/guid` (2.2+): the pool guid in decimal.
pub fn parse_guid(bytes: &[u8]) -> Result<u64, ParseError> {
    const WHAT: &str = "pool guid";
    unsigned(one_line(bytes, WHAT)?).map_err(|m| ParseError::new(WHAT, m))
}

/// Numbered lines (1-based) as text, without the `\n` and any `\r` before it.
fn lines<'a>(
    bytes: &'a [u8],
    what: &'static str,
) -> impl Iterator<Item = (usize, Result<&'a str, ParseError>)> {
    bytes
        .split(|&b| b == b'\n')
        .enumerate()
        .map(move |(i, raw)| {
            let n = i + 1;
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            let text = std::str::from_utf8(raw)
                .map_err(|e| ParseError::new(what, format!("not UTF-8 text: {e}")).at_line(n));
            (n, text)
        })
}

/// A one-line file with surrounding white space removed; blank is an error.
fn one_line<'a>(bytes: &'a [u8], what: &'static str) -> Result<&'a str, ParseError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| ParseError::new(what, format!("not UTF-8 text: {e}")))?
        .trim();
    if text.is_empty() {
        return Err(ParseError::new(what, "empty"));
    }
    if text.contains('\n') {
        return Err(ParseError::new(what, "more than one line"));
    }
    Ok(text)
}

/// The seven-field kstat header, when `line` has its shape (seven fields, flags printed as
/// `0x%02x`). `Ok(None)` means "not a header"; a header-shaped line with a bad field is an
/// error rather than a data row, because no data row has that shape.
fn parse_header(
    line: &str,
    n: usize,
    what: &'static str,
) -> Result<Option<KstatHeader>, ParseError> {
    let tokens: Vec<&str> = line.split_ascii_whitespace().collect();
    let [kid, kstat_type, flags, ndata, data_size, crtime, snaptime] = tokens[..] else {
        return Ok(None);
    };
    let Some(flags_hex) = flags
        .strip_prefix("0x")
        .or_else(|| flags.strip_prefix("0X"))
    else {
        return Ok(None);
    };
    let err = |field: &str, m: String| {
        ParseError::new(what, format!("kstat header {field}: {m}")).at_line(n)
    };
    let flags = if !flags_hex.is_empty() && flags_hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        u32::from_str_radix(flags_hex, 16)
            .map_err(|_| err("flags", format!("`{flags}` does not fit in 32 bits")))?
    } else {
        return Err(err("flags", format!("`{flags}` is not hexadecimal")));
    };
    let kstat_type = unsigned(kstat_type).map_err(|m| err("type", m))?;
    Ok(Some(KstatHeader {
        kid: unsigned(kid).map_err(|m| err("kid", m))?,
        kstat_type: u32::try_from(kstat_type)
            .map_err(|_| err("type", format!("{kstat_type} does not fit in 32 bits")))?,
        flags,
        ndata: unsigned(ndata).map_err(|m| err("ndata", m))?,
        data_size: unsigned(data_size).map_err(|m| err("data_size", m))?,
        crtime: unsigned(crtime).map_err(|m| err("crtime", m))?,
        snaptime: unsigned(snaptime).map_err(|m| err("snaptime", m))?,
    }))
}

/// One `name type data` row, by the rule of `kstat_seq_show_named` (docs/zfs-sources.md, "Kstat text"): names may be longer than
/// the 31-column field (so columns cannot be trusted), may contain spaces (`1 ns` in
/// `dmu_tx_assign`), and STRING values may contain spaces (dataset names).
fn parse_named_row(line: &str, n: usize) -> Result<(String, KstatValue), ParseError> {
    let err = |m: String| ParseError::new("kstat", m).at_line(n);
    // Spans end on ASCII white space or the end of the line, so slicing is on char boundaries.
    // Only the first two are needed for a usual row: no list of them is built.
    let mut tokens = token_spans(line);
    let first = tokens.next();
    let second_as_type = tokens
        .next()
        .and_then(|(s, e)| Some((type_code(&line[s..e])?, e)));
    let (name, code, value) = match (first, second_as_type) {
        (Some((name_start, name_end)), Some((code, type_end))) => (
            &line[name_start..name_end],
            code,
            line[type_end..].trim_start(),
        ),
        _ => {
            // A name with spaces: the type and value are the last two fields.
            let spans: Vec<(usize, usize)> = token_spans(line).collect();
            let [_, .., (type_start, type_end), (value_start, value_end)] = spans[..] else {
                return Err(err(format!(
                    "expected `name type value`, found `{}`",
                    line.trim().escape_debug()
                )));
            };
            let ty = &line[type_start..type_end];
            let code = type_code(ty).ok_or_else(|| {
                err(format!(
                    "`{}` is not a kstat type code (0-7)",
                    ty.escape_debug()
                ))
            })?;
            (
                line[..type_start].trim(),
                code,
                &line[value_start..value_end],
            )
        }
    };
    let value = match code {
        // CHAR is printed `%-16s`: the padding is not part of the value.
        0 => KstatValue::Text(value.trim_end().to_string()),
        // STRING is printed `%s`, so whatever follows the type field is the value.
        7 => KstatValue::Text(value.to_string()),
        1 | 3 | 5 => KstatValue::Signed(
            single(value)
                .and_then(signed)
                .map_err(|m| err(format!("`{name}`: {m}")))?,
        ),
        _ => KstatValue::Unsigned(
            single(value)
                .and_then(unsigned)
                .map_err(|m| err(format!("`{name}`: {m}")))?,
        ),
    };
    Ok((name.to_string(), value))
}

/// Byte ranges of the ASCII-whitespace-separated fields of `line`.
fn token_spans(line: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let bytes = line.as_bytes();
    let mut pos = 0;
    std::iter::from_fn(move || {
        while pos < bytes.len() && bytes[pos].is_ascii_whitespace() {
            pos += 1;
        }
        if pos >= bytes.len() {
            return None;
        }
        let start = pos;
        while pos < bytes.len() && !bytes[pos].is_ascii_whitespace() {
            pos += 1;
        }
        Some((start, pos))
    })
}

/// `KSTAT_DATA_*` code 0-7, printed `%-4d`.
fn type_code(token: &str) -> Option<u8> {
    match token {
        "0" => Some(0),
        "1" => Some(1),
        "2" => Some(2),
        "3" => Some(3),
        "4" => Some(4),
        "5" => Some(5),
        "6" => Some(6),
        "7" => Some(7),
        _ => None,
    }
}

fn type_name(kstat_type: u32) -> &'static str {
    match kstat_type {
        0 => "RAW",
        1 => "NAMED",
        2 => "INTR",
        3 => "IO",
        4 => "TIMER",
        _ => "unknown",
    }
}

/// A numeric value must be one field: trailing text means the line is not what we think.
fn single(value: &str) -> Result<&str, String> {
    let value = value.trim();
    if value.is_empty() {
        return Err("missing value".to_string());
    }
    if value.contains(|c: char| c.is_ascii_whitespace()) {
        return Err(format!(
            "`{}` is more than one number",
            value.escape_debug()
        ));
    }
    Ok(value)
}

/// [`super::decimal`], with "too large" said rather than a silent wrap.
fn unsigned(token: &str) -> Result<u64, String> {
    super::decimal::<u64>(token.as_bytes()).map_err(|e| match e {
        super::BadDecimal::NotDigits => format!(
            "`{}` is not an unsigned decimal number",
            token.escape_debug()
        ),
        super::BadDecimal::TooLarge => {
            format!("{token} is larger than an unsigned 64-bit value can hold")
        }
    })
}

fn signed(token: &str) -> Result<i64, String> {
    let (negative, digits) = match token.strip_prefix('-') {
        Some(digits) => (true, digits),
        None => (false, token),
    };
    let outside = || format!("{token} is outside the range of a signed 64-bit value");
    match super::decimal::<u64>(digits.as_bytes()) {
        Err(super::BadDecimal::NotDigits) => Err(format!(
            "`{}` is not a signed decimal number",
            token.escape_debug()
        )),
        Err(super::BadDecimal::TooLarge) => Err(outside()),
        // i64::MIN's magnitude is one more than i64::MAX: subtracting from 0 reaches it.
        Ok(magnitude) if negative => 0i64.checked_sub_unsigned(magnitude).ok_or_else(outside),
        Ok(magnitude) => i64::try_from(magnitude).map_err(|_| outside()),
    }
}

/// What a `txgs` column fills, decided once from the column header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TxgColumn {
    Txg,
    Birth,
    State,
    Ndirty,
    Nread,
    Nwritten,
    Reads,
    Writes,
    Otime,
    Qtime,
    Wtime,
    Stime,
    Other,
}

fn txg_columns(line: &str, n: usize) -> Result<Vec<TxgColumn>, ParseError> {
    let columns: Vec<TxgColumn> = line
        .split_ascii_whitespace()
        .map(|c| match c {
            "txg" => TxgColumn::Txg,
            "birth" => TxgColumn::Birth,
            "state" => TxgColumn::State,
            "ndirty" => TxgColumn::Ndirty,
            "nread" => TxgColumn::Nread,
            "nwritten" => TxgColumn::Nwritten,
            "reads" => TxgColumn::Reads,
            "writes" => TxgColumn::Writes,
            "otime" => TxgColumn::Otime,
            "qtime" => TxgColumn::Qtime,
            "wtime" => TxgColumn::Wtime,
            "stime" => TxgColumn::Stime,
            _ => TxgColumn::Other,
        })
        .collect();
    for (required, name) in [
        (TxgColumn::Txg, "txg"),
        (TxgColumn::Birth, "birth"),
        (TxgColumn::State, "state"),
    ] {
        if !columns.contains(&required) {
            return Err(ParseError::new(
                "txgs",
                format!(
                    "expected the column header `txg birth state …`, found `{}` (no `{name}`)",
                    line.trim().escape_debug()
                ),
            )
            .at_line(n));
        }
    }
    Ok(columns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::error::Location;
    use proptest::prelude::*;
    use std::path::{Path, PathBuf};

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures");

    fn fixture(rel: &str) -> Vec<u8> {
        let path = Path::new(FIXTURES).join(rel);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Every file under `dir`, recursively, sorted.
    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    out.push(path);
                }
            }
        }
        out.sort();
        out
    }

    /// The Linux kstat trees among the fixtures: external Linux samples and both lab captures.
    fn linux_fixture_files() -> Vec<PathBuf> {
        let mut files = walk(&Path::new(FIXTURES).join("external/linux"));
        for capture in ["lab/basic/000", "lab/basic/001"] {
            files.extend(walk(
                &Path::new(FIXTURES).join(capture).join("proc/spl/kstat/zfs"),
            ));
        }
        files
    }

    fn file_name(path: &Path) -> &str {
        path.file_name().and_then(|n| n.to_str()).unwrap_or("")
    }

    /// The named-kstat fixtures (arcstats, zil and the other NAMED kstats of a capture), by
    /// file name.
    fn is_named_fixture(name: &str) -> bool {
        matches!(
            name,
            "arcstats" | "zil" | "zil-with-injected-underflow" | "iostats" | "dmu_tx_assign"
        ) || name.starts_with("objset-")
    }

    /// An independent, deliberately naive reading of a NAMED kstat file: for every line after
    /// the first two, the last field is the value, the one before it the type, everything
    /// before that the name. Right for every fixture, since none has a STRING with a space.
    fn naive(text: &str) -> (Vec<&str>, Vec<(String, &str, &str)>) {
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
        assert_eq!(
            lines.next().unwrap().split_whitespace().collect::<Vec<_>>(),
            ["name", "type", "data"]
        );
        let rows = lines
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let t: Vec<&str> = l.split_whitespace().collect();
                let n = t.len();
                (t[..n - 2].join(" "), t[n - 2], t[n - 1])
            })
            .collect();
        (header, rows)
    }

    #[test]
    fn every_named_fixture_matches_a_naive_reading() {
        let mut seen: std::collections::BTreeMap<&str, usize> = Default::default();
        for path in linux_fixture_files() {
            let name = file_name(&path);
            if !is_named_fixture(name) {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            let parsed = parse_named(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            if bytes.is_empty() {
                // The lab's dmu_tx_assign files are empty (see `empty_input_is_empty_kstat`).
                assert_eq!(parsed, Kstat::default(), "{}", path.display());
                continue;
            }
            let text = std::str::from_utf8(&bytes).unwrap();
            let (header, rows) = naive(text);
            let h = parsed.header.expect("every fixture has a header line");
            assert_eq!(h.kid.to_string(), header[0]);
            assert_eq!(h.kstat_type.to_string(), header[1]);
            assert_eq!(format!("0x{:02x}", h.flags), header[2]);
            assert_eq!(h.ndata.to_string(), header[3], "{}", path.display());
            assert_eq!(h.data_size.to_string(), header[4]);
            assert_eq!(h.crtime.to_string(), header[5]);
            assert_eq!(h.snaptime.to_string(), header[6]);
            assert_eq!(
                rows.len().to_string(),
                header[3],
                "{}: rows vs ndata",
                path.display()
            );
            assert_eq!(parsed.fields.len(), rows.len(), "{}", path.display());
            for (row_name, ty, value) in rows {
                let expected = match ty {
                    "0" | "7" => KstatValue::Text(value.to_string()),
                    "1" | "3" | "5" => KstatValue::Signed(value.parse().unwrap()),
                    _ => KstatValue::Unsigned(value.parse().unwrap()),
                };
                assert_eq!(
                    parsed.fields.get(&row_name),
                    Some(&expected),
                    "{}: {row_name}",
                    path.display()
                );
            }
            let kind: &'static str = match name {
                "arcstats" => "arcstats",
                "iostats" => "iostats",
                "dmu_tx_assign" => "dmu_tx_assign",
                n if n.starts_with("zil") => "zil",
                _ => "objset",
            };
            *seen.entry(kind).or_default() += 1;
        }
        // Counted with `find`: 6 external + 2 lab arcstats; zil 0.6.5, 0.7.5, 2.3 + lab ×2;
        // iostats 2.3 ×2 + lab ×2; the two non-empty dmu_tx_assign.
        assert_eq!(seen.get("arcstats"), Some(&8), "{seen:?}");
        assert_eq!(seen.get("zil"), Some(&5), "{seen:?}");
        assert_eq!(seen.get("iostats"), Some(&4), "{seen:?}");
        assert_eq!(seen.get("dmu_tx_assign"), Some(&2), "{seen:?}");
        // node_exporter 4, openzfs_exporter 1, telegraf 2.3 86, lab 2×2.
        assert_eq!(seen.get("objset"), Some(&95), "{seen:?}");
    }

    #[test]
    fn other_named_fixtures_parse_too() {
        // dmu_tx, abdstats, dbufstats, zfetchstats, ddt_stats_*, …: every file whose header
        // says NAMED (type 1) parses, with as many rows as its ndata.
        let mut count = 0;
        for path in linux_fixture_files() {
            let bytes = std::fs::read(&path).unwrap();
            let Ok(text) = std::str::from_utf8(&bytes) else {
                continue;
            };
            let first: Vec<&str> = text
                .lines()
                .next()
                .unwrap_or("")
                .split_whitespace()
                .collect();
            if first.len() != 7 || first[1] != "1" {
                continue;
            }
            let parsed = parse_named(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!(
                parsed.fields.len().to_string(),
                first[3],
                "{}",
                path.display()
            );
            count += 1;
        }
        assert!(count > 120, "only {count} NAMED files found");
    }

    #[test]
    fn rows_in_any_order_are_sorted_and_a_repeated_name_keeps_its_last_value() {
        let text = b"13 1 0x01 4 1088 1 2\nname type data\nmisses 4 7\nhits 4 5\nc 4 1\nhits 4 6\n";
        let k = parse_named(text).unwrap();
        let names: Vec<&str> = k.fields.keys().map(String::as_str).collect();
        assert_eq!(names, ["c", "hits", "misses"]);
        assert_eq!(k.fields["hits"].as_u64(), Some(6), "the last of the two");
        assert_eq!(k.fields["misses"].as_u64(), Some(7));
    }

    #[test]
    fn arcstats_literals_and_version_facts() {
        // external/linux/telegraf-zol-0.6.4/arcstats, lines 1, 3 and 88.
        let a = parse_named(&fixture("external/linux/telegraf-zol-0.6.4/arcstats")).unwrap();
        assert_eq!(
            a.header,
            Some(KstatHeader {
                kid: 5,
                kstat_type: 1,
                flags: 1,
                ndata: 86,
                data_size: 4128,
                crtime: 23617128247,
                snaptime: 12081618582809582,
            })
        );
        assert_eq!(a.u64("hits"), Some(5968846374));
        assert_eq!(a.u64("arc_meta_limit"), Some(12663094272));
        assert_eq!(a.u64("arc_meta_max"), Some(18327165696));
        assert!(
            !a.fields.contains_key("memory_available_bytes"),
            "0.7.3+ only"
        );

        // 0.6.5.4 predates memory_available_bytes (0.7.3).
        let a = parse_named(&fixture(
            "external/linux/node_exporter-zol-0.6.5.4/arcstats",
        ))
        .unwrap();
        assert_eq!(a.u64("hits"), Some(8772612));
        assert_eq!(a.u64("arc_sys_free"), Some(261496832));
        assert!(!a.fields.contains_key("memory_available_bytes"));

        // arcbeat 0.7.6: memory_available_bytes is type 3 (INT64), line 85.
        let a = parse_named(&fixture("external/linux/arcbeat-zol-0.7.6+/arcstats")).unwrap();
        assert_eq!(
            a.fields.get("memory_available_bytes"),
            Some(&KstatValue::Signed(7059144704))
        );
        assert_eq!(a.u64("hits"), Some(1539125690));

        // riemann-tools 2.1: arc_meta_limit still there, iohits not yet.
        let a = parse_named(&fixture(
            "external/linux/riemann-tools-openzfs-2.1/arcstats",
        ))
        .unwrap();
        assert!(a.u64("arc_meta_limit").is_some());
        assert!(!a.fields.contains_key("iohits"));
        assert_eq!(
            a.fields.get("memory_available_bytes"),
            Some(&KstatValue::Signed(12877639168))
        );
        assert_eq!(a.u64("abd_chunk_waste_size"), Some(7168));

        // zftop 2.2+: arc_meta_limit gone, iohits present (line 4), 32-char name (> 31 columns).
        let a = parse_named(&fixture("external/linux/zftop-openzfs-2.2+/arcstats")).unwrap();
        assert!(!a.fields.contains_key("arc_meta_limit"));
        assert!(!a.fields.contains_key("p"));
        assert_eq!(a.u64("iohits"), Some(23938));
        assert_eq!(a.u64("hits"), Some(11891096));
        assert_eq!(a.u64("demand_iohit_predictive_prefetch"), Some(1325));
        assert_eq!(
            a.fields.get("memory_available_bytes"),
            Some(&KstatValue::Signed(7122022400))
        );
        assert!(
            a.u64("arc_meta_used").is_some(),
            "arc_meta_used stays in 2.2+"
        );

        // telegraf 2.3.
        let a = parse_named(&fixture("external/linux/telegraf-openzfs-2.3/arcstats")).unwrap();
        assert_eq!(a.u64("hits"), Some(33266704081));
        assert_eq!(a.u64("iohits"), Some(1992434));
        assert_eq!(a.u64("demand_iohit_predictive_prefetch"), Some(221984));
        assert!(!a.fields.contains_key("arc_meta_limit"));
        assert_eq!(
            a.fields.get("memory_available_bytes"),
            Some(&KstatValue::Signed(3970557824))
        );

        // Lab capture 000 (OpenZFS 2.1.11): lines 1, 3, 108, 114.
        let a = parse_named(&fixture("lab/basic/000/proc/spl/kstat/zfs/arcstats")).unwrap();
        assert_eq!(a.header.map(|h| (h.kid, h.ndata)), Some((12, 123)));
        assert_eq!(a.u64("hits"), Some(3524));
        assert_eq!(
            a.fields.get("memory_available_bytes"),
            Some(&KstatValue::Signed(2564484352))
        );
        assert_eq!(a.u64("arc_meta_limit"), Some(1167836160));
        assert!(!a.fields.contains_key("iohits"));
    }

    #[test]
    fn zil_literals() {
        // Lab 000 zil: 13 fields (≤ 2.1), SLOG in use.
        let z = parse_named(&fixture("lab/basic/000/proc/spl/kstat/zfs/zil")).unwrap();
        assert_eq!(z.fields.len(), 13);
        assert_eq!(z.u64("zil_commit_count"), Some(500));
        assert_eq!(z.u64("zil_itx_metaslab_slog_count"), Some(501));
        assert_eq!(z.u64("zil_itx_metaslab_slog_bytes"), Some(2231896));
        // 2.3: 20 fields, with the 2.3-only error/stall/suspend counts.
        let z = parse_named(&fixture("external/linux/telegraf-openzfs-2.3/zil")).unwrap();
        assert_eq!(z.fields.len(), 20);
        assert_eq!(z.u64("zil_commit_suspend_count"), Some(0));
        assert_eq!(z.u64("zil_itx_metaslab_normal_alloc"), Some(743618220032));
        // The injected value 2^64 - 13930 is a valid u64 and must come through unchanged.
        let z = parse_named(&fixture(
            "external/linux/node_exporter-zol-0.7.5/zil-with-injected-underflow",
        ))
        .unwrap();
        assert_eq!(z.u64("zil_itx_needcopy_bytes"), Some(18446744073709537686));
        assert_eq!(z.u64("zil_itx_needcopy_bytes"), Some(u64::MAX - 13929));
    }

    #[test]
    fn dmu_tx_assign_names_have_spaces() {
        // external/linux/telegraf-openzfs-2.3/store/dmu_tx_assign: 34 buckets,
        // `1 ns` … `8589934592 ns`.
        let k = parse_named(&fixture(
            "external/linux/telegraf-openzfs-2.3/store/dmu_tx_assign",
        ))
        .unwrap();
        assert_eq!(k.fields.len(), 34);
        assert_eq!(k.u64("1 ns"), Some(0));
        assert_eq!(k.u64("128 ns"), Some(12567));
        assert_eq!(k.u64("131072 ns"), Some(256805));
        assert_eq!(k.u64("8589934592 ns"), Some(1));
        let k = parse_named(&fixture(
            "external/linux/telegraf-openzfs-2.3/zroot-nas/dmu_tx_assign",
        ))
        .unwrap();
        assert_eq!(k.fields.len(), 16);
        assert_eq!(k.u64("512 ns"), Some(1));
        assert_eq!(k.u64("16384 ns"), Some(2));
    }

    #[test]
    fn objset_dataset_names() {
        let k = parse_named(&fixture(
            "lab/basic/000/proc/spl/kstat/zfs/tank/objset-0x55",
        ))
        .unwrap();
        assert_eq!(k.text("dataset_name"), Some("tank/data"));
        assert_eq!(k.u64("writes"), Some(700));
        assert_eq!(k.u64("nwritten"), Some(211763200));
        let k = parse_named(&fixture(
            "lab/basic/001/proc/spl/kstat/zfs/tank/objset-0x55",
        ))
        .unwrap();
        assert_eq!(k.u64("nread"), Some(209715200));
        let k = parse_named(&fixture(
            "external/linux/openzfs_exporter-ubuntu-0.8/rpool/objset-0xNN",
        ))
        .unwrap();
        assert_eq!(
            k.text("dataset_name"),
            Some("rpool/ROOT/ubuntu_2bfmnx/var/lib/NetworkManager")
        );
        assert_eq!(k.u64("nread"), Some(1175));
        // No trailing newline in this file.
        let k = parse_named(&fixture(
            "external/linux/node_exporter-pool-kstats/poolz1/objset-2",
        ))
        .unwrap();
        assert_eq!(k.text("dataset_name"), Some("poolz1/dataset1"));
        assert_eq!(k.u64("nunlinked"), Some(14));
        // 2.3: the per-dataset ZIL counters are there.
        let k = parse_named(&fixture(
            "external/linux/telegraf-openzfs-2.3/store/objset-0x36",
        ))
        .unwrap();
        assert_eq!(k.text("dataset_name"), Some("store"));
        assert_eq!(k.fields.len(), 27);
        assert_eq!(k.u64("zil_itx_metaslab_slog_alloc"), Some(0));
    }

    #[test]
    fn iostats_literals() {
        let k = parse_named(&fixture(
            "external/linux/telegraf-openzfs-2.3/zroot-nas/iostats",
        ))
        .unwrap();
        assert_eq!(k.u64("autotrim_bytes_written"), Some(2455925514240));
        assert_eq!(k.u64("direct_read_bytes"), Some(603402620928));
        let k = parse_named(&fixture("lab/basic/000/proc/spl/kstat/zfs/tank/iostats")).unwrap();
        assert_eq!(k.fields.len(), 18, "2.1: trim, autotrim and simple_trim");
        assert!(!k.fields.contains_key("arc_read_count"));
    }

    #[test]
    fn empty_input_is_empty_kstat() {
        // The lab's 2.1 `dmu_tx_assign` files are 0 bytes long.
        assert_eq!(parse_named(b"").unwrap(), Kstat::default());
        assert_eq!(parse_named(b"\n\n").unwrap(), Kstat::default());
    }

    #[test]
    fn every_type_code_and_awkward_values() {
        let text = "\
9 1 0x01 9 2448 100 200
name                            type data
c                               0    abc             
i32                             1    -5
u32                             2    4294967295
i64                             3    -9223372036854775808
u64                             4    18446744073709551615
long                            5    9223372036854775807
ulong                           6    7
dataset_name                    7    tank/my data set
a_name_that_is_longer_than_thirty_one_columns 4 42
";
        let k = parse_named(text.as_bytes()).unwrap();
        assert_eq!(k.header.map(|h| h.ndata), Some(9));
        let f = &k.fields;
        assert_eq!(f["c"], KstatValue::Text("abc".into()));
        assert_eq!(f["i32"], KstatValue::Signed(-5));
        assert_eq!(f["u32"], KstatValue::Unsigned(4294967295));
        assert_eq!(f["i64"], KstatValue::Signed(i64::MIN));
        assert_eq!(f["u64"], KstatValue::Unsigned(u64::MAX));
        assert_eq!(f["long"], KstatValue::Signed(i64::MAX));
        assert_eq!(f["ulong"], KstatValue::Unsigned(7));
        assert_eq!(
            f["dataset_name"],
            KstatValue::Text("tank/my data set".into())
        );
        assert_eq!(
            f["a_name_that_is_longer_than_thirty_one_columns"],
            KstatValue::Unsigned(42)
        );
        assert_eq!(f.len(), 9);
    }

    #[test]
    fn signed_values_hold_the_whole_i64_range_and_no_more() {
        assert_eq!(signed("-9223372036854775808"), Ok(i64::MIN));
        assert_eq!(signed("9223372036854775807"), Ok(i64::MAX));
        assert_eq!(signed("-0"), Ok(0));
        for outside in [
            "9223372036854775808",
            "-9223372036854775809",
            "-99999999999999999999",
        ] {
            assert!(
                signed(outside).unwrap_err().contains("outside the range"),
                "{outside}"
            );
        }
        for bad in ["", "-", "+1", "--1", "1-", " 1"] {
            assert!(
                signed(bad).unwrap_err().contains("not a signed decimal"),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn headerless_input() {
        // KSTAT_FLAG_NO_HEADERS: neither the header nor the column line.
        let k = parse_named(b"hits 4 10\nmisses 4 2\n").unwrap();
        assert_eq!(k.header, None);
        assert_eq!(k.u64("hits"), Some(10));
        assert_eq!(k.u64("misses"), Some(2));
        // Column line without the kstat header, CRLF, and a leading newline.
        let k = parse_named(b"\nname type data\r\nhits 4 10\r\n").unwrap();
        assert_eq!(k.header, None);
        assert_eq!(k.u64("hits"), Some(10));
        assert_eq!(k.fields.len(), 1);
    }

    fn line_of(e: &ParseError) -> Option<usize> {
        match e.at {
            Some(Location::Line(n)) => Some(n),
            _ => None,
        }
    }

    #[test]
    fn malformed_lines_are_errors_with_line_numbers() {
        let head = "1 1 0x01 2 96 1 2\nname type data\nhits 4 1\n";
        let cases: &[(&str, usize, &str)] = &[
            ("misses 4 18446744073709551616\n", 4, "larger than"),
            ("misses 3 9223372036854775808\n", 4, "outside the range"),
            ("misses 3 -9223372036854775809\n", 4, "outside the range"),
            ("misses 4 -1\n", 4, "not an unsigned"),
            ("misses 4 12abc\n", 4, "not an unsigned"),
            ("misses 4 +12\n", 4, "not an unsigned"),
            ("misses 4\n", 4, "missing value"),
            ("misses 4 1 2\n", 4, "more than one number"),
            ("misses 8 1\n", 4, "not a kstat type code"),
            ("misses\n", 4, "expected `name type value`"),
            ("\n\nmisses x y\n", 6, "not a kstat type code"),
        ];
        for (tail, line, needle) in cases {
            let e = parse_named(format!("{head}{tail}").as_bytes()).unwrap_err();
            assert_eq!(line_of(&e), Some(*line), "{tail:?}: {e}");
            assert!(e.to_string().contains(needle), "{tail:?}: {e}");
            assert_eq!(e.what, "kstat");
        }
        let e = parse_named(b"1 1 0xZZ 2 96 1 2\n").unwrap_err();
        assert_eq!(line_of(&e), Some(1));
        assert!(e.to_string().contains("flags"), "{e}");
        let e = parse_named(b"1 1 0x01 2 96 1 99999999999999999999\n").unwrap_err();
        assert!(e.to_string().contains("snaptime"), "{e}");
        let e = parse_named(b"hits 4 1\n\xff\xfe 4 1\n").unwrap_err();
        assert_eq!(line_of(&e), Some(2));
        // A KSTAT_TYPE_IO file handed to the NAMED parser says so.
        let e = parse_named(&fixture(
            "external/linux/node_exporter-pool-kstats/pool1/io",
        ))
        .unwrap_err();
        assert!(e.to_string().contains("not NAMED"), "{e}");
    }

    /// Naive txgs reading: split on white space, header names index the columns.
    fn naive_txgs(text: &str) -> Vec<std::collections::BTreeMap<String, String>> {
        let mut lines = text.lines().filter(|l| !l.trim().is_empty());
        let cols: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
        lines
            .map(|l| {
                cols.iter()
                    .map(|c| c.to_string())
                    .zip(l.split_whitespace().map(String::from))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn txgs_fixtures_match_a_naive_reading() {
        let mut files = 0;
        for path in linux_fixture_files() {
            if file_name(&path) != "txgs" {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            let parsed = parse_txgs(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let naive = naive_txgs(std::str::from_utf8(&bytes).unwrap());
            assert_eq!(parsed.len(), naive.len(), "{}", path.display());
            for (t, row) in parsed.iter().zip(&naive) {
                let num = |c: &str| row[c].parse::<u64>().unwrap();
                assert_eq!(t.txg, num("txg"));
                assert_eq!(t.birth, num("birth"));
                assert_eq!(t.state, row["state"]);
                assert_eq!(t.ndirty, num("ndirty"));
                assert_eq!(t.nread, num("nread"));
                assert_eq!(t.nwritten, num("nwritten"));
                assert_eq!(t.reads, num("reads"));
                assert_eq!(t.writes, num("writes"));
                assert_eq!(t.otime, num("otime"));
                assert_eq!(t.qtime, num("qtime"));
                assert_eq!(t.wtime, num("wtime"));
                assert_eq!(t.stime, num("stime"));
            }
            files += 1;
        }
        assert_eq!(files, 4, "2.3 store + zroot-nas, lab 000 + 001");
    }

    #[test]
    fn txgs_literals() {
        // lab/basic/000/.../tank/txgs: txgs 5..=14, row of txg 10 is line 7, last one open.
        let t = parse_txgs(&fixture("lab/basic/000/proc/spl/kstat/zfs/tank/txgs")).unwrap();
        assert_eq!(t.len(), 10);
        assert_eq!(t[0].txg, 5);
        let ten = &t[5];
        assert_eq!(
            ten,
            &Txg {
                txg: 10,
                birth: 44507219650,
                state: "C".into(),
                ndirty: 62359040,
                nread: 0,
                nwritten: 122601472,
                reads: 0,
                writes: 511,
                otime: 1750063290,
                qtime: 34770,
                wtime: 382750,
                stime: 1799393370,
            }
        );
        assert_eq!(t[9].txg, 14);
        assert_eq!(t[9].state, "O");
        let t = parse_txgs(&fixture("external/linux/telegraf-openzfs-2.3/store/txgs")).unwrap();
        assert_eq!(t.len(), 100);
        assert_eq!(t[0].txg, 25290454);
        assert_eq!(t[0].otime, 5123159494);
        assert_eq!(t[99].txg, 25290553);
        assert_eq!(t[99].state, "O");
    }

    #[test]
    fn txgs_other_layouts() {
        // Single-spaced here; the kernel's column padding is covered by the fixtures.
        let rows = "txg birth state ndirty nread nwritten reads writes otime qtime wtime stime\n\
                    7 100 C 1 2 3 4 5 6 7 8 9\n\
                    8 200 S 0 0 0 0 0 0 0 0 0";
        // ZoL 0.7: a RAW kstat with the numeric header first.
        let v07 = format!("18 0 0x01 0 0 1000 2000\n{rows}\n");
        // FreeBSD sysctl: a leading newline, no trailing one.
        let freebsd = format!("\n{rows}");
        for text in [v07.as_str(), freebsd.as_str(), rows] {
            let t = parse_txgs(text.as_bytes()).unwrap();
            assert_eq!(t.len(), 2, "{text:?}");
            assert_eq!((t[0].txg, t[0].birth, t[0].stime), (7, 100, 9));
            assert_eq!((t[1].txg, t[1].state.as_str()), (8, "S"));
        }
        // History off: only the column header (or nothing at all).
        assert_eq!(parse_txgs(b"txg birth state\n").unwrap(), vec![]);
        assert_eq!(parse_txgs(b"").unwrap(), vec![]);
        // Unknown columns are skipped; missing counter columns read as 0.
        let t = parse_txgs(b"txg birth extra state\n1 2 zz C\n").unwrap();
        assert_eq!(
            t,
            vec![Txg {
                txg: 1,
                birth: 2,
                state: "C".into(),
                ..Txg::default()
            }]
        );
    }

    #[test]
    fn txgs_errors() {
        let e = parse_txgs(b"txg birth state\n1 2\n").unwrap_err();
        assert_eq!(line_of(&e), Some(2));
        assert!(
            e.to_string()
                .contains("2 fields where the column header has 3"),
            "{e}"
        );
        let e = parse_txgs(b"txg birth state\n1 2 C\n3 4 S 5\n").unwrap_err();
        assert_eq!(line_of(&e), Some(3));
        assert!(
            e.to_string()
                .contains("4 fields where the column header has 3"),
            "{e}"
        );
        let e = parse_txgs(b"txg birth state\n1 2 C\n1 99999999999999999999 C\n").unwrap_err();
        assert_eq!(line_of(&e), Some(3));
        assert!(e.to_string().contains("larger than"), "{e}");
        let e = parse_txgs(b"1 2 C\n").unwrap_err();
        assert_eq!(line_of(&e), Some(1));
        assert!(e.to_string().contains("column header"), "{e}");
    }

    #[test]
    fn pool_io_fixtures() {
        // node_exporter pool1/io, line 3 (trailing spaces on lines 2 and 3).
        let io = parse_pool_io(&fixture(
            "external/linux/node_exporter-pool-kstats/pool1/io",
        ))
        .unwrap();
        assert_eq!(
            io,
            PoolIo {
                nread: 1884160,
                nwritten: 3206144,
                reads: 22,
                writes: 132,
                wtime: 7155162,
                wlentime: 104112268,
                wupdate: 79210489694949,
                rtime: 24168078,
                rlentime: 104112268,
                rupdate: 79210489849220,
                wcnt: 0,
                rcnt: 0,
            }
        );
        let io = parse_pool_io(&fixture(
            "external/linux/node_exporter-pool-kstats/poolz1/io",
        ))
        .unwrap();
        assert_eq!(io.nwritten, 2680501248);
        assert_eq!(io.writes, 25294);
        assert_eq!(io.wlentime, 6472105124093);
        assert_eq!(io.rupdate, 110734831944501);
        // telegraf 0.6.4 POOL/io: trailing spaces removed by the Go source.
        let io = parse_pool_io(&fixture("external/linux/telegraf-zol-0.6.4/POOL/io")).unwrap();
        assert_eq!(io.nwritten, 6450688);
        assert_eq!(io.writes, 978);
        assert_eq!(io.rupdate, 2263669871823);
    }

    #[test]
    fn pool_io_freebsd_and_errors() {
        // FreeBSD `kstat.zfs.<pool>.misc.io`: the data line only.
        let io = parse_pool_io(b"1 2 3 4 5 6 7 8 9 10 11 12\n").unwrap();
        assert_eq!((io.nread, io.wupdate, io.rcnt), (1, 7, 12));
        assert!(parse_pool_io(b"").is_err());
        let e = parse_pool_io(b"1 2 3\n").unwrap_err();
        assert_eq!(line_of(&e), Some(1));
        let e =
            parse_pool_io(b"1 2 3 4 5 6 7 8 9 10 11 12\n1 2 3 4 5 6 7 8 9 10 11 12\n").unwrap_err();
        assert_eq!(line_of(&e), Some(2));
        let e = parse_pool_io(b"nread nwritten\n1 2\n").unwrap_err();
        assert!(e.to_string().contains("lacks `reads`"), "{e}");
        let e = parse_pool_io(&fixture("lab/basic/000/proc/spl/kstat/zfs/zil")).unwrap_err();
        assert!(e.to_string().contains("not IO"), "{e}");
    }

    #[test]
    fn state_and_guid_fixtures() {
        let mut states = Vec::new();
        for path in linux_fixture_files() {
            let bytes = std::fs::read(&path).unwrap();
            match file_name(&path) {
                "state" => {
                    let s = parse_state(&bytes).unwrap();
                    assert_eq!(s, std::str::from_utf8(&bytes).unwrap().trim());
                    states.push(s);
                }
                "guid" => {
                    let g = parse_guid(&bytes).unwrap();
                    assert_eq!(g.to_string(), std::str::from_utf8(&bytes).unwrap().trim());
                }
                _ => {}
            }
        }
        states.sort();
        // node_exporter pool1/pool2/poolz1, telegraf store/zroot-nas, lab 000/001.
        assert_eq!(
            states,
            [
                "DEGRADED",
                "ONLINE",
                "ONLINE",
                "ONLINE",
                "ONLINE",
                "ONLINE",
                "SUSPENDED"
            ]
        );
        // Literal values read from the files.
        assert_eq!(
            parse_guid(&fixture("external/linux/telegraf-openzfs-2.3/store/guid")).unwrap(),
            14462676634310329861
        );
        assert_eq!(
            parse_guid(&fixture(
                "external/linux/telegraf-openzfs-2.3/zroot-nas/guid"
            ))
            .unwrap(),
            13912022383768625417
        );
    }

    #[test]
    fn state_and_guid_errors() {
        assert!(parse_state(b"").is_err());
        assert!(parse_state(b"  \n").is_err());
        assert!(parse_state(b"ONLINE\nDEGRADED\n").is_err());
        assert!(parse_state(b"ON LINE").is_err());
        assert_eq!(parse_state(b"ONLINE").unwrap(), "ONLINE");
        assert!(parse_guid(b"18446744073709551616\n").is_err());
        assert!(parse_guid(b"0x1234\n").is_err());
        assert!(parse_guid(b"").is_err());
        assert_eq!(parse_guid(b"18446744073709551615").unwrap(), u64::MAX);
    }

    /// Real inputs for the no-panic properties.
    fn sample_inputs() -> Vec<Vec<u8>> {
        [
            "external/linux/zftop-openzfs-2.2+/arcstats",
            "external/linux/telegraf-zol-0.6.4/arcstats",
            "external/linux/telegraf-openzfs-2.3/store/dmu_tx_assign",
            "external/linux/telegraf-openzfs-2.3/store/objset-0x36",
            "external/linux/telegraf-openzfs-2.3/store/txgs",
            "external/linux/node_exporter-pool-kstats/pool1/io",
            "lab/basic/000/proc/spl/kstat/zfs/tank/state",
            "external/linux/telegraf-openzfs-2.3/store/guid",
        ]
        .iter()
        .map(|p| fixture(p))
        .collect()
    }

    fn run_all(bytes: &[u8]) {
        let _ = parse_named(bytes);
        let _ = parse_txgs(bytes);
        let _ = parse_pool_io(bytes);
        let _ = parse_state(bytes);
        let _ = parse_guid(bytes);
    }

    /// A field, a possible type code, a value: any printable characters around the separators.
    const ROW_LIKE: &str = "[ \\t]{0,2}\\PC{0,12}[ \\t]{1,3}[0-9]{0,2}[ \\t]{0,4}\\PC{0,12}";

    proptest! {
        #[test]
        fn no_panic_on_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            run_all(&bytes);
        }

        #[test]
        fn no_panic_on_random_text(
            header in any::<bool>(),
            rows in proptest::collection::vec(ROW_LIKE, 0..20),
        ) {
            // Valid UTF-8 with multi-byte characters next to the separators the parsers
            // slice at, which random bytes almost never produce.
            let head = if header { "1 1 0x01 3 816 1 2\nname type data\n" } else { "" };
            let text = format!("{head}{}", rows.join("\n"));
            run_all(text.as_bytes());
            let txgs = format!("txg birth state\n{}", rows.join("\n"));
            let _ = parse_txgs(txgs.as_bytes());
        }

        #[test]
        fn no_panic_on_truncated_or_mutated_real_files(
            which in 0usize..8,
            cut in any::<proptest::sample::Index>(),
            flip in any::<proptest::sample::Index>(),
            byte in any::<u8>(),
        ) {
            let inputs = sample_inputs();
            let input = &inputs[which];
            let truncated = &input[..cut.index(input.len() + 1)];
            run_all(truncated);
            let mut mutated = input.clone();
            if !mutated.is_empty() {
                let i = flip.index(mutated.len());
                mutated[i] = byte;
            }
            run_all(&mutated);
        }

        #[test]
        fn huge_numbers_are_errors_not_wraps(
            digits in "[0-9]{1,60}",
            neg in any::<bool>(),
            code in 0u8..10,
        ) {
            let value = if neg { format!("-{digits}") } else { digits.clone() };
            let text = format!("1 1 0x01 1 272 1 2\nname type data\nfield {code} {value}\n");
            let result = parse_named(text.as_bytes());
            let as_i128: Option<i128> = value.parse().ok();
            match (code, result) {
                (0 | 7, Ok(k)) => prop_assert_eq!(k.text("field"), Some(value.as_str())),
                (1 | 3 | 5, Ok(k)) => {
                    prop_assert_eq!(Some(i128::from(k.i64("field").unwrap())), as_i128)
                }
                (2 | 4 | 6, Ok(k)) => {
                    prop_assert_eq!(Some(i128::from(k.u64("field").unwrap())), as_i128)
                }
                (1..=6, Err(e)) => {
                    // Only out-of-range values (or `-` on an unsigned) may fail.
                    let fits = match (code, as_i128) {
                        (1 | 3 | 5, Some(v)) => i64::try_from(v).is_ok(),
                        (_, Some(v)) => !neg && u64::try_from(v).is_ok(),
                        (_, None) => false,
                    };
                    prop_assert!(!fits, "{value} rejected: {e}");
                    prop_assert_eq!(e.at, Some(Location::Line(3)));
                }
                (8 | 9, r) => prop_assert!(r.is_err()),
                (_, r) => prop_assert!(false, "unexpected {r:?}"),
            }
            let _ = parse_txgs(format!("txg birth state\n{value} {value} C\n").as_bytes());
            let _ = parse_guid(value.as_bytes());
        }
    }
}
