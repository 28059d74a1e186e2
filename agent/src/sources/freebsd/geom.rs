//! Parser of `kern.geom.confxml`, the GEOM topology as XML (sys/geom/geom_dump.c).
//!
//! Two things come out of it:
//! * every DISK-class provider (`ada0`, `da3`, `nvd0`) with its size, sector sizes and
//!   `rotationrate`, which is how FreeBSD tells an SSD from an HDD;
//! * a map from every provider that sits on exactly one disk (partitions `ada0p3`, labels
//!   `gpt/zfs0`, `diskid/DISK-…`, GELI `ada0p3.eli`, nested slices `ada0s1a`) to that disk's
//!   name, which is what joins a ZFS vdev path to the disk whose devstat counters move.
//!
//! Pure: text in, [`Geom`] out.

use crate::sources::error::ParseError;
use std::collections::{BTreeMap, HashMap};

const WHAT: &str = "geom confxml";

/// `DISK_RR_MIN` / `DISK_RR_MAX` (sys/geom/geom_disk.h): the range of real RPM values.
const RPM_MIN: u32 = 0x401;
const RPM_MAX: u32 = 0xfffe;

/// How many provider → consumer → provider hops to follow before giving up. Real stacks are
/// a handful deep (disk → MBR → BSD label → GELI → LABEL); the bound also stops a cycle in
/// a malformed document.
const MAX_DEPTH: usize = 32;

/// One DISK-class provider.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GeomDisk {
    pub name: String,
    /// Bytes.
    pub mediasize: Option<u64>,
    /// Logical sector size, bytes.
    pub sectorsize: Option<u32>,
    /// Usually the physical sector size of 512e drives (4096); RAID controllers may put their
    /// stripe here instead.
    pub stripesize: Option<u64>,
    pub stripeoffset: Option<u64>,
    /// `<rotationrate>`: `Some(0)` = non-rotating (SSD, NVMe), `Some(rpm)` for 1025–65534;
    /// `None` when the drive did not say (`unknown`), the value was out of range (`invalid`)
    /// or the element is missing (older FreeBSD).
    pub rotation_rate: Option<u32>,
    pub descr: Option<String>,
    pub ident: Option<String>,
}

impl GeomDisk {
    /// `Some(true)` for an HDD, `Some(false)` for an SSD, `None` when unknown.
    pub fn rotational(&self) -> Option<bool> {
        self.rotation_rate.map(|r| r != 0)
    }

    /// The spindle speed of an HDD.
    pub fn rpm(&self) -> Option<u32> {
        self.rotation_rate.filter(|&r| r != 0)
    }

    /// The physical sector size, derived the way ZFS's vdev_geom.c derives the physical
    /// ashift: the stripe size when it is a power of two larger than the sector size, at most
    /// 64 KiB (ASHIFT_MAX 16) and with a zero stripe offset; otherwise the sector size.
    pub fn physical_block_size(&self) -> Option<u32> {
        let sector = self.sectorsize?;
        let stripe = self.stripesize.unwrap_or(0);
        if stripe.is_power_of_two()
            && stripe > u64::from(sector)
            && stripe <= 1 << 16
            && self.stripeoffset.unwrap_or(0) == 0
        {
            u32::try_from(stripe).ok()
        } else {
            Some(sector)
        }
    }
}

/// What `kern.geom.confxml` says about disks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Geom {
    /// DISK-class providers, in document order.
    pub disks: Vec<GeomDisk>,
    /// Provider name → the name of the one disk under it. Disks map to themselves. Providers
    /// on several disks (gmirror, gstripe, multipath) and those on no disk (md) are absent.
    pub whole_disk: BTreeMap<String, String>,
}

impl Geom {
    pub fn disk(&self, name: &str) -> Option<&GeomDisk> {
        self.disks.iter().find(|d| d.name == name)
    }

    /// Every other provider that sits on `disk` alone (partitions, labels, GELI), sorted:
    /// the names a vdev path may use for it.
    pub fn aliases_of(&self, disk: &str) -> Vec<String> {
        self.whole_disk
            .iter()
            .filter(|(p, d)| d.as_str() == disk && p.as_str() != disk)
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// The disk under a provider, accepting a device path (`/dev/gpt/zfs0` as ZFS records it).
    pub fn whole_disk_of(&self, provider: &str) -> Option<&str> {
        let name = provider.strip_prefix("/dev/").unwrap_or(provider);
        self.whole_disk.get(name).map(String::as_str)
    }
}

struct Provider<'a> {
    name: &'a str,
    geom: &'a str,
    class: &'a str,
}

/// Parses the XML. Surrounding white space and a trailing NUL (a raw sysctl string) are
/// ignored.
pub fn parse(xml: &str) -> Result<Geom, ParseError> {
    let xml = xml.trim_matches(|c: char| c.is_whitespace() || c == '\0');
    let doc = roxmltree::Document::parse(xml).map_err(|e| {
        ParseError::new(WHAT, format!("not well-formed XML: {e}")).at_line(e.pos().row as usize)
    })?;
    let mesh = doc.root_element();
    if !mesh.has_tag_name("mesh") {
        return Err(ParseError::new(
            WHAT,
            format!(
                "root element is <{}>, expected <mesh>",
                mesh.tag_name().name()
            ),
        ));
    }

    let mut disks = Vec::new();
    // provider id → provider; geom id → the provider ids its consumers attach to.
    let mut providers: HashMap<&str, Provider> = HashMap::new();
    let mut consumes: HashMap<&str, Vec<&str>> = HashMap::new();

    for class in mesh.children().filter(|n| n.has_tag_name("class")) {
        let class_name = child_text(class, "name").unwrap_or("");
        for geom in class.children().filter(|n| n.has_tag_name("geom")) {
            let Some(geom_id) = geom.attribute("id") else {
                continue;
            };
            let refs = consumes.entry(geom_id).or_default();
            for consumer in geom.children().filter(|n| n.has_tag_name("consumer")) {
                if let Some(r) = consumer
                    .children()
                    .find(|n| n.has_tag_name("provider"))
                    .and_then(|p| p.attribute("ref"))
                {
                    refs.push(r);
                }
            }
            for p in geom.children().filter(|n| n.has_tag_name("provider")) {
                let (Some(id), Some(name)) = (p.attribute("id"), child_text(p, "name")) else {
                    continue;
                };
                providers.entry(id).or_insert(Provider {
                    name,
                    geom: geom_id,
                    class: class_name,
                });
                if class_name == "DISK" {
                    disks.push(disk(p, name));
                }
            }
        }
    }

    let mut whole_disk = BTreeMap::new();
    for p in providers.values() {
        if let Some(d) = disk_under(p, &providers, &consumes) {
            whole_disk
                .entry(p.name.to_string())
                .or_insert_with(|| d.to_string());
        }
    }
    Ok(Geom { disks, whole_disk })
}

/// Follows provider → its geom's single consumer → that provider … down to a DISK provider.
fn disk_under<'a>(
    start: &Provider<'a>,
    providers: &HashMap<&str, Provider<'a>>,
    consumes: &HashMap<&str, Vec<&'a str>>,
) -> Option<&'a str> {
    let mut p = start;
    for _ in 0..MAX_DEPTH {
        if p.class == "DISK" {
            return Some(p.name);
        }
        match consumes.get(p.geom).map(Vec::as_slice) {
            Some([only]) => p = providers.get(only)?,
            // No consumer (md, a disk-like class) or several (mirror, stripe): no one disk.
            _ => return None,
        }
    }
    None
}

fn disk(p: roxmltree::Node, name: &str) -> GeomDisk {
    let config = p.children().find(|n| n.has_tag_name("config"));
    let conf = |tag: &str| config.and_then(|c| child_text(c, tag));
    GeomDisk {
        name: name.to_string(),
        mediasize: number(child_text(p, "mediasize")),
        sectorsize: number(child_text(p, "sectorsize")),
        stripesize: number(child_text(p, "stripesize")),
        stripeoffset: number(child_text(p, "stripeoffset")),
        rotation_rate: conf("rotationrate").and_then(rotation_rate),
        descr: conf("descr").map(str::to_string),
        ident: conf("ident").map(str::to_string).filter(|s| !s.is_empty()),
    }
}

/// g_disk_dumpconf prints `unknown`, `0` (non-rotating), the RPM when it lies in
/// DISK_RR_MIN..=DISK_RR_MAX, or `invalid`. Anything else is treated as not known.
fn rotation_rate(text: &str) -> Option<u32> {
    let v: u32 = text.trim().parse().ok()?;
    (v == 0 || (RPM_MIN..=RPM_MAX).contains(&v)).then_some(v)
}

fn number<T: std::str::FromStr>(text: Option<&str>) -> Option<T> {
    text?.trim().parse().ok()
}

fn child_text<'a>(node: roxmltree::Node<'a, '_>, tag: &str) -> Option<&'a str> {
    node.children()
        .find(|n| n.has_tag_name(tag))
        .map(|n| n.text().unwrap_or("").trim())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::freebsd::sysctl::{DumpSysctl, Sysctl};
    use proptest::prelude::*;

    const FACTER: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/external/geom/facter-freebsd12/kern.geom.confxml"
    ));
    const PFSENSE: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/external/geom/fusioninventory-pfsense/sysctl-kern.geom.confxml.txt"
    ));

    #[test]
    fn facter_freebsd12_laptop_ssd_with_gpt_geli_and_labels() {
        let g = parse(FACTER).unwrap();
        // The DISK class holds a single provider, ada0 (read in the fixture).
        assert_eq!(g.disks.len(), 1);
        let d = &g.disks[0];
        assert_eq!(d.name, "ada0");
        assert_eq!(d.mediasize, Some(512_110_190_592));
        assert_eq!(d.sectorsize, Some(512));
        assert_eq!(d.stripesize, Some(4096));
        assert_eq!(d.stripeoffset, Some(0));
        // <rotationrate>0</rotationrate>: a Samsung 850 PRO SSD.
        assert_eq!(d.rotation_rate, Some(0));
        assert_eq!(d.rotational(), Some(false));
        assert_eq!(d.rpm(), None);
        assert_eq!(d.descr.as_deref(), Some("Samsung SSD 850 PRO 512GB"));
        assert_eq!(d.ident.as_deref(), Some("S250NXAG959927J"));
        // 512e: 512-byte logical sectors, 4 KiB stripe = physical sectors.
        assert_eq!(d.physical_block_size(), Some(4096));

        // PART ada0 → ada0p1..3; LABEL ada0p1 → gpt/gptboot0; ELI ada0p2/3 → .eli.
        for p in [
            "ada0",
            "ada0p1",
            "ada0p2",
            "ada0p3",
            "gpt/gptboot0",
            "ada0p2.eli",
            "ada0p3.eli",
        ] {
            assert_eq!(g.whole_disk_of(p), Some("ada0"), "{p}");
        }
        assert_eq!(g.whole_disk_of("/dev/ada0p3.eli"), Some("ada0"));
        assert_eq!(g.whole_disk.len(), 7);
        assert_eq!(
            g.aliases_of("ada0"),
            [
                "ada0p1",
                "ada0p2",
                "ada0p2.eli",
                "ada0p3",
                "ada0p3.eli",
                "gpt/gptboot0"
            ]
        );
        assert!(g.aliases_of("ada1").is_empty());
        assert_eq!(g.whole_disk_of("swap"), None);
    }

    #[test]
    fn pfsense_vm_through_the_dump_reader_with_mbr_bsd_nesting() {
        // This fixture is `sysctl kern.geom.confxml` output, with the name prefix.
        let dump = DumpSysctl::parse(PFSENSE).unwrap();
        let g = parse(&dump.text("kern.geom.confxml").unwrap()).unwrap();
        let names: Vec<&str> = g.disks.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["ada0", "cd0"]);
        let ada = g.disk("ada0").unwrap();
        assert_eq!(ada.mediasize, Some(4_294_967_296));
        assert_eq!(ada.sectorsize, Some(512));
        // stripesize 0: physical = logical.
        assert_eq!(ada.physical_block_size(), Some(512));
        // <rotationrate>unknown</rotationrate> on the QEMU disk.
        assert_eq!(ada.rotation_rate, None);
        assert_eq!(ada.rotational(), None);
        assert_eq!(ada.descr.as_deref(), Some("QEMU HARDDISK"));
        let cd = g.disk("cd0").unwrap();
        assert_eq!((cd.mediasize, cd.sectorsize), (Some(0), Some(2048)));
        // <ident></ident> is empty.
        assert_eq!(cd.ident, None);

        // MBR slice ada0s1 on ada0, BSD partitions ada0s1a/b inside it, and labels on those.
        for p in [
            "ada0",
            "ada0s1",
            "ada0s1a",
            "ada0s1b",
            "label/swap0",
            "ufsid/5745adc5aff0029d",
        ] {
            assert_eq!(g.whole_disk_of(p), Some("ada0"), "{p}");
        }
        assert_eq!(g.whole_disk_of("cd0"), Some("cd0"));
        // md0 (class MD) sits on no disk.
        assert_eq!(g.whole_disk_of("md0"), None);
    }

    fn disk_xml(name: &str, id: &str, rr: &str) -> String {
        format!(
            "<geom id=\"g{id}\"><name>{name}</name><provider id=\"{id}\"><name>{name}</name>\
             <mediasize>100</mediasize><sectorsize>512</sectorsize><stripesize>0</stripesize>\
             <stripeoffset>0</stripeoffset><config><rotationrate>{rr}</rotationrate></config>\
             </provider></geom>"
        )
    }

    #[test]
    fn rotation_rates_mirrors_and_cycles() {
        let xml = format!(
            "<mesh><class id=\"c1\"><name>DISK</name>{}{}{}{}{}</class>\
             <class id=\"c2\"><name>MIRROR</name><geom id=\"gm\"><name>gm0</name>\
             <consumer id=\"x1\"><provider ref=\"1\"/></consumer>\
             <consumer id=\"x2\"><provider ref=\"2\"/></consumer>\
             <provider id=\"m\"><name>mirror/gm0</name></provider></geom></class>\
             <class id=\"c3\"><name>LOOP</name><geom id=\"gl\"><name>l</name>\
             <consumer id=\"x3\"><provider ref=\"l\"/></consumer>\
             <provider id=\"l\"><name>loop0</name></provider></geom></class>\
             <class id=\"c4\"><name>LABEL</name><geom id=\"gd\"><name>da3</name>\
             <consumer id=\"x4\"><provider ref=\"4\"/></consumer>\
             <provider id=\"d\"><name>diskid/DISK-WD-WCC4N1234567</name></provider>\
             </geom></class></mesh>",
            disk_xml("da0", "1", "7200"),
            disk_xml("da1", "2", "invalid"),
            disk_xml("da2", "3", "1"),
            disk_xml("da3", "4", "65534"),
            disk_xml("da4", "5", "65535"),
        );
        let g = parse(&xml).unwrap();
        let rr: Vec<Option<u32>> = g.disks.iter().map(|d| d.rotation_rate).collect();
        assert_eq!(rr, [Some(7200), None, None, Some(65534), None]);
        assert_eq!(g.disk("da0").unwrap().rotational(), Some(true));
        assert_eq!(g.disk("da0").unwrap().rpm(), Some(7200));
        // Two consumers: no single disk. A self-consuming geom does not loop forever.
        assert_eq!(g.whole_disk_of("mirror/gm0"), None);
        assert_eq!(g.whole_disk_of("loop0"), None);
        // A diskid label on da3, as ZFS may record it.
        assert_eq!(
            g.whole_disk_of("/dev/diskid/DISK-WD-WCC4N1234567"),
            Some("da3")
        );
        assert_eq!(g.aliases_of("da3"), ["diskid/DISK-WD-WCC4N1234567"]);
    }

    #[test]
    fn physical_block_size_rules() {
        let d = |sector, stripe, offset| GeomDisk {
            sectorsize: Some(sector),
            stripesize: Some(stripe),
            stripeoffset: Some(offset),
            ..GeomDisk::default()
        };
        assert_eq!(d(512, 4096, 0).physical_block_size(), Some(4096));
        assert_eq!(d(512, 4096, 512).physical_block_size(), Some(512));
        assert_eq!(d(512, 3 * 4096, 0).physical_block_size(), Some(512));
        assert_eq!(d(512, 1 << 20, 0).physical_block_size(), Some(512));
        assert_eq!(d(4096, 4096, 0).physical_block_size(), Some(4096));
        assert_eq!(GeomDisk::default().physical_block_size(), None);
    }

    #[test]
    fn bad_documents_are_errors_with_a_reason() {
        let e = parse("<mesh><class>").unwrap_err();
        assert!(e.message.contains("not well-formed"), "{e}");
        let e = parse("<other/>").unwrap_err();
        assert!(e.message.contains("<other>"), "{e}");
        assert!(parse("").is_err());
        // An empty mesh is fine: no disks.
        assert_eq!(parse("<mesh/>\0").unwrap(), Geom::default());
    }

    proptest! {
        #[test]
        fn random_text_never_panics(s in "\\PC{0,400}") {
            let _ = parse(&s);
        }

        #[test]
        fn truncations_and_byte_flips_of_real_xml_never_panic(
            cut in 0usize..9282, flip in 0usize..9282, byte in any::<u8>()
        ) {
            let mut b = FACTER.as_bytes().to_vec();
            let flip = flip % b.len();
            b[flip] = byte;
            b.truncate(cut.min(b.len()));
            let s = String::from_utf8_lossy(&b);
            let _ = parse(&s);
        }
    }
}
