//! When an `ipBlock` admits (nearly) everyone: the Pod network or every address.

use std::fmt;
use std::net::IpAddr;

use crate::cidr::{Cidr, Family};

/// The RFC 1918 private IPv4 ranges, as written in messages.
const PRIVATE_IPV4: [&str; 3] = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"];

/// The unique-local IPv6 range (RFC 4193).
const UNIQUE_LOCAL_IPV6: &str = "fc00::/7";

/// IPv4 blocks with a prefix shorter than this are broad.
const IPV4_NARROWEST_BROAD: u8 = 8;

/// IPv6 blocks with a prefix shorter than this are broad.
const IPV6_NARROWEST_BROAD: u8 = 32;

/// Unique-local IPv6 blocks with a prefix shorter than this are broad.
const UNIQUE_LOCAL_NARROWEST_BROAD: u8 = 64;

/// Why an `ipBlock` admits (nearly) everyone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Broadness {
    /// An IPv4 block with a prefix shorter than /8.
    Ipv4WiderThan8,
    /// An IPv6 block with a prefix shorter than /32.
    Ipv6WiderThan32,
    /// The block holds the whole of this RFC 1918 range.
    WholePrivateRange(&'static str),
    /// A block within the unique-local range `fc00::/7` with a prefix
    /// shorter than /64.
    UniqueLocalWiderThan64,
    /// The block, less its `except` entries, holds this console Pod's address.
    HoldsConsolePod(IpAddr),
    /// The block, less its `except` entries, shares addresses with this
    /// `spec.podCIDRs` entry of a Node.
    OverlapsPodCidr(Cidr),
}

impl fmt::Display for Broadness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Broadness::Ipv4WiderThan8 => f.write_str("an IPv4 block wider than /8"),
            Broadness::Ipv6WiderThan32 => f.write_str("an IPv6 block wider than /32"),
            Broadness::WholePrivateRange(range) => {
                write!(f, "holds the whole private range {range}")
            }
            Broadness::UniqueLocalWiderThan64 => {
                f.write_str("a unique-local IPv6 block wider than /64")
            }
            Broadness::HoldsConsolePod(addr) => write!(f, "holds the console Pod address {addr}"),
            Broadness::OverlapsPodCidr(cidr) => write!(f, "overlaps the Node podCIDR {cidr}"),
        }
    }
}

fn constant(s: &str) -> Cidr {
    s.parse()
        .expect("the crate's own CIDR constants are well formed")
}

/// Whether `addrs` of `block` remain once `except` is cut out.
fn admits(block: &Cidr, except: &[Cidr], addrs: &Cidr) -> bool {
    block
        .intersection(addrs)
        .is_some_and(|shared| !shared.is_covered_by(except))
}

/// Why the `ipBlock` `block` (with its `except` entries) admits (nearly)
/// everyone, or `None` when it does not; the first reason in the order of
/// [`Broadness`]' variants.
///
/// The size rules (wider than /8 or /32, a whole private range, a
/// unique-local block wider than /64) look at `block` alone: cutting holes
/// in a block leaves it broad. The address rules (a console Pod's address,
/// a Node's podCIDR) look at what the block admits once `except` is cut
/// out: an excepted address is not admitted.
pub fn ip_block_broadness(
    block: &Cidr,
    except: &[Cidr],
    pod_ips: &[IpAddr],
    node_pod_cidrs: &[Cidr],
) -> Option<Broadness> {
    match block.family() {
        Family::V4 if block.prefix_len() < IPV4_NARROWEST_BROAD => {
            return Some(Broadness::Ipv4WiderThan8);
        }
        Family::V6 if block.prefix_len() < IPV6_NARROWEST_BROAD => {
            return Some(Broadness::Ipv6WiderThan32);
        }
        _ => {}
    }
    if let Some(range) = PRIVATE_IPV4
        .into_iter()
        .find(|range| block.contains(&constant(range)))
    {
        return Some(Broadness::WholePrivateRange(range));
    }
    if block.prefix_len() < UNIQUE_LOCAL_NARROWEST_BROAD
        && block.overlaps(&constant(UNIQUE_LOCAL_IPV6))
    {
        return Some(Broadness::UniqueLocalWiderThan64);
    }
    if let Some(addr) = pod_ips.iter().copied().find(|addr| {
        let host = Cidr::new(*addr, Family::of(*addr).max_prefix_len())
            .expect("a full-length prefix fits its family");
        admits(block, except, &host)
    }) {
        return Some(Broadness::HoldsConsolePod(addr));
    }
    node_pod_cidrs
        .iter()
        .find(|pod_cidr| admits(block, except, pod_cidr))
        .map(|pod_cidr| Broadness::OverlapsPodCidr(*pod_cidr))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cidr(s: &str) -> Cidr {
        s.parse().unwrap()
    }

    fn cidrs(list: &[&str]) -> Vec<Cidr> {
        list.iter().map(|s| cidr(s)).collect()
    }

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    struct Case {
        block: &'static str,
        except: &'static [&'static str],
        pod_ips: &'static [&'static str],
        node_pod_cidrs: &'static [&'static str],
        want: Option<Broadness>,
    }

    const NO: &[&str] = &[];

    fn case(block: &'static str, want: Option<Broadness>) -> Case {
        Case {
            block,
            except: NO,
            pod_ips: NO,
            node_pod_cidrs: NO,
            want,
        }
    }

    fn check(cases: &[Case]) {
        for c in cases {
            let got = ip_block_broadness(
                &cidr(c.block),
                &cidrs(c.except),
                &ips(c.pod_ips),
                &cidrs(c.node_pod_cidrs),
            );
            assert_eq!(
                got, c.want,
                "block {} except {:?} pods {:?} podCIDRs {:?}",
                c.block, c.except, c.pod_ips, c.node_pod_cidrs
            );
        }
    }

    #[test]
    fn width_rules() {
        use Broadness::*;
        check(&[
            case("0.0.0.0/0", Some(Ipv4WiderThan8)),
            case("64.0.0.0/7", Some(Ipv4WiderThan8)),
            // Exactly /8 is not wider than /8; a public /8 is not broad by size.
            case("11.0.0.0/8", None),
            case("203.0.113.0/24", None),
            case("::/0", Some(Ipv6WiderThan32)),
            case("2001:db8::/31", Some(Ipv6WiderThan32)),
            case("2001:db8::/32", None),
            case("2001:db8:1::/48", None),
            // An IPv4 /9 is narrow by IPv4's limit even though it is wider than /32.
            case("11.0.0.0/9", None),
        ]);
    }

    #[test]
    fn private_range_rules() {
        use Broadness::*;
        check(&[
            case("10.0.0.0/8", Some(WholePrivateRange("10.0.0.0/8"))),
            case("10.0.0.0/9", None),
            case("172.16.0.0/12", Some(WholePrivateRange("172.16.0.0/12"))),
            case("172.0.0.0/8", Some(WholePrivateRange("172.16.0.0/12"))),
            case("172.16.0.0/13", None),
            case("192.168.0.0/16", Some(WholePrivateRange("192.168.0.0/16"))),
            case("192.0.0.0/8", Some(WholePrivateRange("192.168.0.0/16"))),
            case("192.168.0.0/17", None),
            case("192.168.1.0/24", None),
        ]);
    }

    #[test]
    fn unique_local_rules() {
        use Broadness::*;
        check(&[
            // Wider than /32 is reported first.
            case("fc00::/7", Some(Ipv6WiderThan32)),
            case("fd00::/32", Some(UniqueLocalWiderThan64)),
            case("fd12:3456:789a::/48", Some(UniqueLocalWiderThan64)),
            case("fd12:3456:789a:1::/63", Some(UniqueLocalWiderThan64)),
            case("fd12:3456:789a:1::/64", None),
            case("fd12:3456:789a:1::/96", None),
            // A global-unicast /48 is not unique-local.
            case("2001:db8:1::/48", None),
        ]);
    }

    #[test]
    fn console_pod_rules() {
        use Broadness::*;
        check(&[
            Case {
                pod_ips: &["10.244.1.7"],
                ..case(
                    "10.244.0.0/16",
                    Some(HoldsConsolePod("10.244.1.7".parse().unwrap())),
                )
            },
            Case {
                pod_ips: &["10.244.1.7"],
                ..case(
                    "10.244.1.7/32",
                    Some(HoldsConsolePod("10.244.1.7".parse().unwrap())),
                )
            },
            Case {
                pod_ips: &["10.244.1.7"],
                ..case("10.245.0.0/16", None)
            },
            Case {
                except: &["10.244.1.0/24"],
                pod_ips: &["10.244.1.7"],
                ..case("10.244.0.0/16", None)
            },
            Case {
                pod_ips: &["10.244.1.7", "fd00:10:244:1::7"],
                ..case(
                    "fd00:10:244:1::/96",
                    Some(HoldsConsolePod("fd00:10:244:1::7".parse().unwrap())),
                )
            },
            Case {
                except: &["fd00:10:244:1::7/128"],
                pod_ips: &["fd00:10:244:1::7"],
                ..case("fd00:10:244:1::/96", None)
            },
            // An address of the other family is never held.
            Case {
                pod_ips: &["10.244.1.7"],
                ..case("fd00:10:244:1::/96", None)
            },
        ]);
    }

    #[test]
    fn pod_cidr_rules() {
        use Broadness::*;
        check(&[
            Case {
                node_pod_cidrs: &["10.244.1.0/24"],
                ..case(
                    "10.244.0.0/16",
                    Some(OverlapsPodCidr(cidr("10.244.1.0/24"))),
                )
            },
            // A block inside a podCIDR overlaps it too.
            Case {
                node_pod_cidrs: &["10.244.1.0/24"],
                ..case(
                    "10.244.1.128/25",
                    Some(OverlapsPodCidr(cidr("10.244.1.0/24"))),
                )
            },
            Case {
                node_pod_cidrs: &["10.244.1.0/24", "10.244.2.0/24"],
                ..case(
                    "10.244.2.0/28",
                    Some(OverlapsPodCidr(cidr("10.244.2.0/24"))),
                )
            },
            Case {
                node_pod_cidrs: &["10.244.1.0/24"],
                ..case("10.96.0.0/12", None)
            },
            // Excepted jointly by two halves: the podCIDR is not admitted.
            Case {
                except: &["10.244.1.0/25", "10.244.1.128/25"],
                node_pod_cidrs: &["10.244.1.0/24"],
                ..case("10.244.0.0/16", None)
            },
            // Half excepted: the other half is still admitted.
            Case {
                except: &["10.244.1.0/25"],
                node_pod_cidrs: &["10.244.1.0/24"],
                ..case(
                    "10.244.0.0/16",
                    Some(OverlapsPodCidr(cidr("10.244.1.0/24"))),
                )
            },
            Case {
                node_pod_cidrs: &["10.244.1.0/24", "fd00:10:244:1::/64"],
                ..case("fd00:10:244::/56", Some(UniqueLocalWiderThan64))
            },
            Case {
                node_pod_cidrs: &["fd00:10:244:1::/64"],
                ..case(
                    "fd00:10:244:1::/80",
                    Some(OverlapsPodCidr(cidr("fd00:10:244:1::/64"))),
                )
            },
            Case {
                except: &["fd00:10:244:1::/64"],
                node_pod_cidrs: &["fd00:10:244:1::/64"],
                ..case("fd00:10:244:1::/80", None)
            },
            Case {
                node_pod_cidrs: &["2001:db8:244:1::/64"],
                ..case(
                    "2001:db8:244::/48",
                    Some(OverlapsPodCidr(cidr("2001:db8:244:1::/64"))),
                )
            },
        ]);
    }

    #[test]
    fn except_never_narrows_a_wide_block() {
        use Broadness::*;
        check(&[
            Case {
                except: &["0.0.0.0/1", "128.0.0.0/1"],
                ..case("0.0.0.0/0", Some(Ipv4WiderThan8))
            },
            Case {
                except: &["::/1", "8000::/1"],
                ..case("::/0", Some(Ipv6WiderThan32))
            },
            Case {
                except: &["10.0.0.0/9"],
                ..case("10.0.0.0/8", Some(WholePrivateRange("10.0.0.0/8")))
            },
            Case {
                except: &["fd00:1::/41", "fd00:1:80::/41"],
                ..case("fd00:1::/40", Some(UniqueLocalWiderThan64))
            },
        ]);
    }

    #[test]
    fn reasons_read_clearly() {
        assert_eq!(
            Broadness::WholePrivateRange("10.0.0.0/8").to_string(),
            "holds the whole private range 10.0.0.0/8"
        );
        assert_eq!(
            Broadness::OverlapsPodCidr(cidr("10.244.1.0/24")).to_string(),
            "overlaps the Node podCIDR 10.244.1.0/24"
        );
        assert_eq!(
            Broadness::HoldsConsolePod("fd00::7".parse().unwrap()).to_string(),
            "holds the console Pod address fd00::7"
        );
    }
}
