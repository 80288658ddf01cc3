//! CIDR blocks of either family: parsing, normalisation, containment, overlap and width.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// The address family of a [`Cidr`] or an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// IPv4: 32-bit addresses.
    V4,
    /// IPv6: 128-bit addresses.
    V6,
}

impl Family {
    /// The family of an address.
    pub fn of(addr: IpAddr) -> Self {
        match addr {
            IpAddr::V4(_) => Family::V4,
            IpAddr::V6(_) => Family::V6,
        }
    }

    /// The longest prefix of the family: 32 or 128.
    pub fn max_prefix_len(self) -> u8 {
        match self {
            Family::V4 => 32,
            Family::V6 => 128,
        }
    }
}

/// Why a string is not a CIDR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CidrError {
    /// No `/` separates an address from a prefix length.
    MissingPrefix(String),
    /// The part before `/` is not an IPv4 or IPv6 address.
    InvalidAddress(String),
    /// The part after `/` is not a decimal number without sign or leading zero.
    InvalidPrefix(String),
    /// The prefix length is longer than the family allows.
    PrefixTooLong {
        /// The prefix length given.
        prefix_len: u8,
        /// The family's longest prefix length.
        max: u8,
    },
}

impl fmt::Display for CidrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CidrError::MissingPrefix(s) => {
                write!(
                    f,
                    "{s:?} is not a CIDR: no /prefix-length after the address"
                )
            }
            CidrError::InvalidAddress(s) => {
                write!(f, "{s:?} is not an IPv4 or IPv6 address")
            }
            CidrError::InvalidPrefix(s) => write!(
                f,
                "{s:?} is not a prefix length (a decimal number without sign or leading zero)"
            ),
            CidrError::PrefixTooLong { prefix_len, max } => {
                write!(f, "prefix length /{prefix_len} is longer than /{max}")
            }
        }
    }
}

impl std::error::Error for CidrError {}

/// A CIDR block: a network address and a prefix length, always normalised
/// (host bits cleared), so two blocks naming the same addresses are equal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cidr {
    network: IpAddr,
    prefix_len: u8,
}

fn to_bits(addr: IpAddr) -> u128 {
    match addr {
        IpAddr::V4(a) => u128::from(a.to_bits()),
        IpAddr::V6(a) => a.to_bits(),
    }
}

fn from_bits(family: Family, bits: u128) -> IpAddr {
    match family {
        // The bits of an IPv4 address never exceed 32: the truncation is exact.
        Family::V4 => IpAddr::V4(Ipv4Addr::from_bits(bits as u32)),
        Family::V6 => IpAddr::V6(Ipv6Addr::from_bits(bits)),
    }
}

/// All the bits of an address of the family.
fn all_ones(family: Family) -> u128 {
    match family {
        Family::V4 => u128::from(u32::MAX),
        Family::V6 => u128::MAX,
    }
}

/// The network mask of a prefix length, within the family's bits.
fn mask(family: Family, prefix_len: u8) -> u128 {
    let host_bits = u32::from(family.max_prefix_len() - prefix_len);
    u128::MAX.checked_shl(host_bits).unwrap_or(0) & all_ones(family)
}

impl Cidr {
    /// The block of `prefix_len` bits around `addr`; host bits are cleared.
    pub fn new(addr: IpAddr, prefix_len: u8) -> Result<Self, CidrError> {
        let family = Family::of(addr);
        let max = family.max_prefix_len();
        if prefix_len > max {
            return Err(CidrError::PrefixTooLong { prefix_len, max });
        }
        let network = from_bits(family, to_bits(addr) & mask(family, prefix_len));
        Ok(Cidr {
            network,
            prefix_len,
        })
    }

    /// The family of the block.
    pub fn family(&self) -> Family {
        Family::of(self.network)
    }

    /// The prefix length.
    pub fn prefix_len(&self) -> u8 {
        self.prefix_len
    }

    /// The first address of the block (its network address).
    pub fn network(&self) -> IpAddr {
        self.network
    }

    /// The last address of the block.
    pub fn last(&self) -> IpAddr {
        let family = self.family();
        let host = !mask(family, self.prefix_len) & all_ones(family);
        from_bits(family, to_bits(self.network) | host)
    }

    /// How many addresses the block holds; `u128::MAX` for `::/0`, which
    /// holds one more than a `u128` counts.
    pub fn width(&self) -> u128 {
        let host_bits = u32::from(self.family().max_prefix_len() - self.prefix_len);
        1u128.checked_shl(host_bits).unwrap_or(u128::MAX)
    }

    /// Whether the block holds the address (never one of the other family).
    pub fn contains_addr(&self, addr: IpAddr) -> bool {
        Family::of(addr) == self.family()
            && to_bits(addr) & mask(self.family(), self.prefix_len) == to_bits(self.network)
    }

    /// Whether every address of `other` is in this block.
    pub fn contains(&self, other: &Cidr) -> bool {
        other.prefix_len >= self.prefix_len && self.contains_addr(other.network)
    }

    /// Whether the two blocks share an address. Two blocks either nest or
    /// are disjoint, so they overlap exactly when one contains the other.
    pub fn overlaps(&self, other: &Cidr) -> bool {
        self.contains(other) || other.contains(self)
    }

    /// The addresses the two blocks share: the narrower one, if they overlap.
    pub fn intersection(&self, other: &Cidr) -> Option<Cidr> {
        if self.contains(other) {
            Some(*other)
        } else if other.contains(self) {
            Some(*self)
        } else {
            None
        }
    }

    /// The two blocks one bit longer that make up this one; `None` for a
    /// single address.
    pub fn halves(&self) -> Option<(Cidr, Cidr)> {
        let family = self.family();
        if self.prefix_len == family.max_prefix_len() {
            return None;
        }
        let prefix_len = self.prefix_len + 1;
        let high_bit = 1u128 << (family.max_prefix_len() - prefix_len);
        let low = Cidr {
            network: self.network,
            prefix_len,
        };
        let high = Cidr {
            network: from_bits(family, to_bits(self.network) | high_bit),
            prefix_len,
        };
        Some((low, high))
    }

    /// Whether every address of the block is in at least one of `others`
    /// (jointly: `10.0.0.0/8` is covered by its two `/9` halves).
    pub fn is_covered_by(&self, others: &[Cidr]) -> bool {
        if others.iter().any(|o| o.contains(self)) {
            return true;
        }
        if !others.iter().any(|o| o.overlaps(self)) {
            return false;
        }
        // Some block lies strictly inside this one: look at each half.
        match self.halves() {
            Some((low, high)) => low.is_covered_by(others) && high.is_covered_by(others),
            None => false,
        }
    }
}

impl FromStr for Cidr {
    type Err = CidrError;

    /// Parses `address/prefix-length`, as Kubernetes' `ipBlock.cidr` is
    /// written. Host bits are accepted, as Kubernetes accepts them, and
    /// cleared: `10.1.2.3/8` is `10.0.0.0/8`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (addr, prefix) = s
            .split_once('/')
            .ok_or_else(|| CidrError::MissingPrefix(s.to_owned()))?;
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| CidrError::InvalidAddress(addr.to_owned()))?;
        let well_formed = !prefix.is_empty()
            && prefix.bytes().all(|b| b.is_ascii_digit())
            && (prefix == "0" || !prefix.starts_with('0'));
        let prefix_len: u8 = if well_formed {
            prefix.parse().ok()
        } else {
            None
        }
        .ok_or_else(|| CidrError::InvalidPrefix(prefix.to_owned()))?;
        Cidr::new(addr, prefix_len)
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix_len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cidr(s: &str) -> Cidr {
        s.parse().unwrap()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn parses_both_families() {
        assert_eq!(cidr("10.0.0.0/8").network(), ip("10.0.0.0"));
        assert_eq!(cidr("10.0.0.0/8").prefix_len(), 8);
        assert_eq!(cidr("10.0.0.0/8").family(), Family::V4);
        assert_eq!(cidr("fd00::/64").network(), ip("fd00::"));
        assert_eq!(cidr("fd00::/64").family(), Family::V6);
        assert_eq!(cidr("0.0.0.0/0").to_string(), "0.0.0.0/0");
        assert_eq!(cidr("::/0").to_string(), "::/0");
    }

    #[test]
    fn normalises_host_bits() {
        assert_eq!(cidr("10.1.2.3/8"), cidr("10.0.0.0/8"));
        assert_eq!(cidr("10.1.2.3/8").to_string(), "10.0.0.0/8");
        assert_eq!(cidr("fd00::1:2/64").to_string(), "fd00::/64");
        assert_eq!(cidr("10.1.2.3/32").to_string(), "10.1.2.3/32");
    }

    #[test]
    fn refuses_malformed() {
        let cases = [
            ("10.0.0.0", CidrError::MissingPrefix("10.0.0.0".into())),
            ("10.0.0/8", CidrError::InvalidAddress("10.0.0".into())),
            ("010.0.0.0/8", CidrError::InvalidAddress("010.0.0.0".into())),
            ("fd00::g/64", CidrError::InvalidAddress("fd00::g".into())),
            ("10.0.0.0/", CidrError::InvalidPrefix(String::new())),
            ("10.0.0.0/+8", CidrError::InvalidPrefix("+8".into())),
            ("10.0.0.0/08", CidrError::InvalidPrefix("08".into())),
            ("10.0.0.0/ 8", CidrError::InvalidPrefix(" 8".into())),
            ("10.0.0.0/999", CidrError::InvalidPrefix("999".into())),
            (
                "10.0.0.0/33",
                CidrError::PrefixTooLong {
                    prefix_len: 33,
                    max: 32,
                },
            ),
            (
                "fd00::/129",
                CidrError::PrefixTooLong {
                    prefix_len: 129,
                    max: 128,
                },
            ),
        ];
        for (input, want) in cases {
            assert_eq!(input.parse::<Cidr>(), Err(want), "{input}");
        }
    }

    #[test]
    fn errors_read_clearly() {
        let err = "10.0.0.0/33".parse::<Cidr>().unwrap_err();
        assert_eq!(err.to_string(), "prefix length /33 is longer than /32");
        let err = "10.0.0.0".parse::<Cidr>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "\"10.0.0.0\" is not a CIDR: no /prefix-length after the address"
        );
    }

    #[test]
    fn widths() {
        assert_eq!(cidr("10.0.0.0/8").width(), 1 << 24);
        assert_eq!(cidr("10.0.0.1/32").width(), 1);
        assert_eq!(cidr("0.0.0.0/0").width(), 1 << 32);
        assert_eq!(cidr("fd00::/64").width(), 1 << 64);
        assert_eq!(cidr("::1/128").width(), 1);
        assert_eq!(cidr("::/1").width(), 1 << 127);
        assert_eq!(cidr("::/0").width(), u128::MAX);
    }

    #[test]
    fn first_and_last() {
        assert_eq!(cidr("10.0.0.0/8").last(), ip("10.255.255.255"));
        assert_eq!(cidr("0.0.0.0/0").last(), ip("255.255.255.255"));
        assert_eq!(cidr("fd00::/64").last(), ip("fd00::ffff:ffff:ffff:ffff"));
        assert_eq!(
            cidr("::/0").last(),
            ip("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")
        );
    }

    #[test]
    fn containment_and_overlap() {
        assert!(cidr("10.0.0.0/8").contains(&cidr("10.1.0.0/16")));
        assert!(!cidr("10.1.0.0/16").contains(&cidr("10.0.0.0/8")));
        assert!(cidr("10.1.0.0/16").overlaps(&cidr("10.0.0.0/8")));
        assert!(!cidr("10.0.0.0/8").overlaps(&cidr("11.0.0.0/8")));
        assert!(cidr("10.0.0.0/8").contains_addr(ip("10.255.0.1")));
        assert!(!cidr("10.0.0.0/8").contains_addr(ip("11.0.0.1")));
        assert!(!cidr("0.0.0.0/0").contains_addr(ip("::1")));
        assert!(!cidr("::/0").contains_addr(ip("10.0.0.1")));
        assert!(!cidr("::/0").overlaps(&cidr("0.0.0.0/0")));
        assert!(cidr("fd00::/8").contains(&cidr("fd12:3456::/48")));
    }

    #[test]
    fn intersection_and_cover() {
        assert_eq!(
            cidr("10.0.0.0/8").intersection(&cidr("10.1.0.0/16")),
            Some(cidr("10.1.0.0/16"))
        );
        assert_eq!(cidr("10.0.0.0/8").intersection(&cidr("11.0.0.0/8")), None);
        let slash8 = cidr("10.0.0.0/8");
        assert!(slash8.is_covered_by(&[cidr("10.0.0.0/9"), cidr("10.128.0.0/9")]));
        assert!(!slash8.is_covered_by(&[cidr("10.0.0.0/9"), cidr("10.128.0.0/10")]));
        assert!(!slash8.is_covered_by(&[]));
        assert!(cidr("10.1.2.3/32").is_covered_by(&[cidr("10.0.0.0/8")]));
        assert!(!cidr("10.1.2.3/32").is_covered_by(&[cidr("10.1.2.4/32")]));
    }

    fn any_cidr() -> impl Strategy<Value = Cidr> {
        prop_oneof![
            (any::<u32>(), 0u8..=32).prop_map(|(a, p)| Cidr::new(
                IpAddr::V4(Ipv4Addr::from_bits(a)),
                p
            )
            .unwrap()),
            (any::<u128>(), 0u8..=128).prop_map(|(a, p)| Cidr::new(
                IpAddr::V6(Ipv6Addr::from_bits(a)),
                p
            )
            .unwrap()),
        ]
    }

    /// Blocks of one family with few prefix lengths and addresses, so that
    /// random pairs and triples often nest or overlap.
    fn clustered_cidr() -> impl Strategy<Value = Cidr> {
        prop_oneof![
            (0u32..4, 0u8..=3).prop_map(|(a, p)| {
                Cidr::new(IpAddr::V4(Ipv4Addr::from_bits(a << 30)), p).unwrap()
            }),
            (0u128..4, 0u8..=3).prop_map(|(a, p)| {
                Cidr::new(IpAddr::V6(Ipv6Addr::from_bits(a << 126)), p).unwrap()
            }),
        ]
    }

    /// Three blocks around one address, widest first: each contains the next.
    fn nested_triple() -> impl Strategy<Value = (Cidr, Cidr, Cidr)> {
        let v4 = (any::<u32>(), 0u8..=32, 0u8..=32, 0u8..=32)
            .prop_map(|(a, p, q, r)| (IpAddr::V4(Ipv4Addr::from_bits(a)), [p, q, r]));
        let v6 = (any::<u128>(), 0u8..=128, 0u8..=128, 0u8..=128)
            .prop_map(|(a, p, q, r)| (IpAddr::V6(Ipv6Addr::from_bits(a)), [p, q, r]));
        prop_oneof![v4, v6].prop_map(|(addr, mut lens)| {
            lens.sort_unstable();
            let [p, q, r] = lens.map(|l| Cidr::new(addr, l).unwrap());
            (p, q, r)
        })
    }

    proptest! {
        #[test]
        fn containment_is_reflexive(a in any_cidr()) {
            prop_assert!(a.contains(&a));
            prop_assert!(a.overlaps(&a));
        }

        #[test]
        fn containment_is_transitive(a in clustered_cidr(), b in clustered_cidr(), c in clustered_cidr()) {
            if a.contains(&b) && b.contains(&c) {
                prop_assert!(a.contains(&c));
            }
        }

        #[test]
        fn nested_blocks_contain_each_other((a, b, c) in nested_triple()) {
            prop_assert!(a.contains(&b));
            prop_assert!(b.contains(&c));
            prop_assert!(a.contains(&c));
        }

        #[test]
        fn containment_implies_overlap(a in clustered_cidr(), b in clustered_cidr()) {
            if a.contains(&b) {
                prop_assert!(a.overlaps(&b));
            }
        }

        #[test]
        fn overlap_is_symmetric(a in clustered_cidr(), b in clustered_cidr()) {
            prop_assert_eq!(a.overlaps(&b), b.overlaps(&a));
        }

        #[test]
        fn overlap_means_a_shared_address(a in clustered_cidr(), b in clustered_cidr()) {
            let shared = [a.network(), a.last()].iter().any(|x| b.contains_addr(*x))
                || [b.network(), b.last()].iter().any(|x| a.contains_addr(*x));
            prop_assert_eq!(a.overlaps(&b), shared);
        }

        #[test]
        fn holds_its_first_and_last_address(a in any_cidr()) {
            prop_assert!(a.contains_addr(a.network()));
            prop_assert!(a.contains_addr(a.last()));
        }

        #[test]
        fn families_never_overlap(a in any_cidr(), b in any_cidr()) {
            if a.family() != b.family() {
                prop_assert!(!a.overlaps(&b));
                prop_assert!(!a.contains(&b));
                prop_assert!(!a.contains_addr(b.network()));
            }
        }

        #[test]
        fn normalisation_is_idempotent(a in any_cidr(), host in any::<u128>()) {
            prop_assert_eq!(Cidr::new(a.network(), a.prefix_len()).unwrap(), a);
            prop_assert_eq!(a.to_string().parse::<Cidr>().unwrap(), a);
            // Any address of the block names the same block.
            let inside = from_bits(a.family(), to_bits(a.network()) | (host & !mask(a.family(), a.prefix_len()) & all_ones(a.family())));
            prop_assert_eq!(Cidr::new(inside, a.prefix_len()).unwrap(), a);
        }

        #[test]
        fn width_counts_first_to_last(a in any_cidr()) {
            let span = to_bits(a.last()) - to_bits(a.network());
            prop_assert_eq!(a.width(), span.saturating_add(1));
        }

        #[test]
        fn halves_make_up_the_block(a in any_cidr()) {
            if let Some((low, high)) = a.halves() {
                prop_assert!(a.contains(&low) && a.contains(&high));
                prop_assert!(!low.overlaps(&high));
                prop_assert_eq!(low.network(), a.network());
                prop_assert_eq!(high.last(), a.last());
                prop_assert!(a.is_covered_by(&[low, high]));
                prop_assert!(!a.is_covered_by(&[low]));
                prop_assert_eq!(low.width().saturating_add(high.width()), a.width());
            } else {
                prop_assert_eq!(a.width(), 1);
            }
        }

        #[test]
        fn intersection_is_contained_by_both(a in clustered_cidr(), b in clustered_cidr()) {
            match a.intersection(&b) {
                Some(i) => prop_assert!(a.contains(&i) && b.contains(&i)),
                None => prop_assert!(!a.overlaps(&b)),
            }
        }
    }
}
