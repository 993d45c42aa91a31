//! Kubernetes' CEL IP and CIDR libraries (`ip(s)`, `cidr(s)`, `isIP`, `isCIDR`, `ip.isCanonical`
//! and the `net.IP` / `net.CIDR` members), over std's address types with Go's `net/netip`
//! parsing, formatting, predicates and error messages, as k8s.io/apiserver/pkg/cel/library's
//! ip.go and cidr.go use them.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// `ip(s)`: `s` as an IP address, as the CEL library accepts it: Go's `netip.ParseAddr` (dotted
/// IPv4 without leading zeros, IPv6 with an optional embedded IPv4 tail), no zone, no
/// IPv4-mapped IPv6 address. The error is the message of the CEL error.
pub fn parse_ip(s: &str) -> Result<IpAddr, String> {
    let (addr, zone) = go_parse_addr(s.as_bytes())
        .map_err(|e| format!("IP Address {} parse error during conversion from string: {e}", go_quote(s)))?;
    if zone {
        return Err(format!("IP address {} with zone value is not allowed", go_quote(s)));
    }
    if is_4in6(&addr) {
        return Err(format!("IPv4-mapped IPv6 address {} is not allowed", go_quote(s)));
    }
    Ok(addr)
}

/// `isIP(s)`: whether `ip(s)` would succeed.
pub fn is_ip(s: &str) -> bool {
    parse_ip(s).is_ok()
}

/// `ip.isCanonical(s)`: whether `s` is the canonical spelling (`string(ip(s))`) of its address;
/// the error of `ip(s)` when it is not an address.
pub fn is_canonical(s: &str) -> Result<bool, String> {
    Ok(ip_string(&parse_ip(s)?) == s)
}

/// `ip.family()`: 4 or 6.
pub fn family(ip: &IpAddr) -> i64 {
    match ip {
        IpAddr::V4(_) => 4,
        IpAddr::V6(_) => 6,
    }
}

/// `ip.isUnspecified()`: `0.0.0.0` or `::` (Go's `Addr.IsUnspecified`).
pub fn is_unspecified(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.octets() == [0; 4],
        IpAddr::V6(v6) => v6.octets() == [0; 16],
    }
}

/// `ip.isLoopback()`: `127.0.0.0/8` or `::1` (Go's `Addr.IsLoopback`).
pub fn is_loopback(ip: &IpAddr) -> bool {
    match unmap(ip) {
        IpAddr::V4(v4) => v4.octets()[0] == 127,
        IpAddr::V6(v6) => u128::from(v6) == 1,
    }
}

/// `ip.isLinkLocalMulticast()`: `224.0.0.0/24` or `ff02::/16` with any flags (Go's
/// `Addr.IsLinkLocalMulticast`).
pub fn is_link_local_multicast(ip: &IpAddr) -> bool {
    match unmap(ip) {
        IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
    }
}

/// `ip.isLinkLocalUnicast()`: `169.254.0.0/16` or `fe80::/10` (Go's `Addr.IsLinkLocalUnicast`).
pub fn is_link_local_unicast(ip: &IpAddr) -> bool {
    match unmap(ip) {
        IpAddr::V4(v4) => v4.octets()[..2] == [169, 254],
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

/// `ip.isGlobalUnicast()`: Go's `Addr.IsGlobalUnicast`: not unspecified, not the IPv4
/// broadcast address, not loopback, multicast or link-local unicast (private and ULA addresses
/// are global unicast).
pub fn is_global_unicast(ip: &IpAddr) -> bool {
    let ip = unmap(ip);
    let excluded = match ip {
        IpAddr::V4(v4) => v4.octets() == [0; 4] || v4.octets() == [255; 4] || v4.octets()[0] & 0xf0 == 0xe0,
        IpAddr::V6(v6) => u128::from(v6) == 0 || v6.octets()[0] == 0xff,
    };
    !excluded && !is_loopback(&ip) && !is_link_local_unicast(&ip)
}

/// `string(ip)` and the value's printed form: Go's `netip.Addr.String` (dotted IPv4, RFC 5952
/// IPv6: lower-case hex, the first longest run of two or more zero groups as `::`).
pub fn ip_string(ip: &IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => format!("::ffff:{v4}"),
            None => ipv6_string(&v6.segments()),
        },
    }
}

/// Go's `appendTo6`: groups in lower-case hex, the first longest run of at least two zero groups
/// shortened to `::`.
fn ipv6_string(groups: &[u16; 8]) -> String {
    let (mut zero_start, mut zero_len) = (usize::MAX, 0);
    let mut i = 0;
    while i < 8 {
        let run = groups[i..].iter().take_while(|g| **g == 0).count();
        if run >= 2 && run > zero_len {
            (zero_start, zero_len) = (i, run);
        }
        i += run.max(1);
    }
    let mut out = String::with_capacity(39);
    let mut i = 0;
    while i < 8 {
        if i == zero_start {
            out.push_str("::");
            i += zero_len;
            continue;
        }
        if i > 0 && !out.ends_with("::") {
            out.push(':');
        }
        out.push_str(&format!("{:x}", groups[i]));
        i += 1;
    }
    out
}

/// Whether `ip` is an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, Go's `Addr.Is4In6`).
fn is_4in6(ip: &IpAddr) -> bool {
    matches!(ip, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some())
}

/// Go's `Addr.Unmap`: the IPv4 address of an IPv4-mapped IPv6 address, others as they are.
fn unmap(ip: &IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(*ip, IpAddr::V4),
        IpAddr::V4(_) => *ip,
    }
}

/// A CIDR value: an address and a prefix length, the address's bits past the prefix kept as
/// they were written (Go's `netip.Prefix`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cidr {
    addr: IpAddr,
    bits: u8,
}

impl Cidr {
    /// `cidr(s)`: Go's `netip.ParsePrefix` (no zone, a decimal prefix length without sign or
    /// leading zero, at most the address's bit length), no IPv4-mapped IPv6 address. The error is
    /// the message of the CEL error (the library prefixes its parse errors twice).
    pub fn parse(s: &str) -> Result<Cidr, String> {
        const CONTEXT: &str = "network address parse error during conversion from string: ";
        let prefix_error = |msg: &str| format!("{CONTEXT}{CONTEXT}netip.ParsePrefix({}): {msg}", go_quote(s));
        let Some(slash) = s.rfind('/') else {
            return Err(prefix_error("no '/'"));
        };
        let (addr, zone) = go_parse_addr(&s.as_bytes()[..slash]).map_err(|e| prefix_error(&e))?;
        if zone {
            return Err(prefix_error("IPv6 zones cannot be present in a prefix"));
        }
        let bits_text = &s[slash + 1..];
        let bad_bits = || prefix_error(&format!("bad bits after slash: {}", go_quote(bits_text)));
        let leading_zero = bits_text.len() > 1 && bits_text.starts_with('0');
        if bits_text.is_empty() || leading_zero || !bits_text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad_bits());
        }
        // Go's strconv.Atoi: a value past i64 is a parse error, not an out-of-range length.
        let bits: i64 = bits_text.parse().map_err(|_| bad_bits())?;
        if bits > i64::from(bit_len(&addr)) {
            return Err(prefix_error("prefix length out of range"));
        }
        if is_4in6(&addr) {
            return Err(format!("{CONTEXT}IPv4-mapped IPv6 address {} is not allowed", go_quote(s)));
        }
        Ok(Cidr { addr, bits: bits as u8 })
    }

    /// `isCIDR(s)`: whether `cidr(s)` would succeed.
    pub fn is_cidr(s: &str) -> bool {
        Cidr::parse(s).is_ok()
    }

    /// `cidr.containsIP(ip)`: whether `ip` is of the CIDR's family and shares its prefix bits.
    pub fn contains_ip(&self, ip: &IpAddr) -> bool {
        bit_len(&self.addr) == bit_len(ip) && mask(&self.addr, self.bits) == mask(ip, self.bits)
    }

    /// `cidr.containsIP(string)`: [`Cidr::contains_ip`] of `ip(s)`; a string that is not an
    /// address fails with the library's `no such overload` (it drops the parse error).
    pub fn contains_ip_str(&self, s: &str) -> Result<bool, String> {
        let ip = parse_ip(s).map_err(|_| "no such overload".to_string())?;
        Ok(self.contains_ip(&ip))
    }

    /// `cidr.containsCIDR(other)`: whether `other` is within this CIDR (Go's `Prefix.Overlaps`
    /// and a prefix at least as long).
    pub fn contains_cidr(&self, other: &Cidr) -> bool {
        self.overlaps(other) && self.bits <= other.bits
    }

    /// `cidr.containsCIDR(string)`: [`Cidr::contains_cidr`] of `cidr(s)`, or its error.
    pub fn contains_cidr_str(&self, s: &str) -> Result<bool, String> {
        Ok(self.contains_cidr(&Cidr::parse(s)?))
    }

    /// `cidr.ip()`: the address as written, bits past the prefix included.
    pub fn ip(&self) -> IpAddr {
        self.addr
    }

    /// `cidr.masked()`: the CIDR with the address's bits past the prefix cleared.
    pub fn masked(&self) -> Cidr {
        Cidr { addr: mask(&self.addr, self.bits), bits: self.bits }
    }

    /// `cidr.prefixLength()`.
    pub fn prefix_length(&self) -> i64 {
        i64::from(self.bits)
    }

    /// The CEL size of a CIDR value (`ceil(prefixLength / 8)`), which the costs of `containsIP`
    /// and `containsCIDR` read.
    pub fn size(&self) -> i64 {
        i64::from(self.bits.div_ceil(8))
    }

    /// Go's `Prefix.Overlaps`: same family and equal addresses under the shorter prefix.
    fn overlaps(&self, other: &Cidr) -> bool {
        if self == other {
            return true;
        }
        if bit_len(&self.addr) != bit_len(&other.addr) {
            return false;
        }
        let bits = self.bits.min(other.bits);
        mask(&self.addr, bits) == mask(&other.addr, bits)
    }
}

/// `string(cidr)` and the value's printed form: `address/bits`, the address as written.
impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", ip_string(&self.addr), self.bits)
    }
}

/// 32 or 128.
fn bit_len(ip: &IpAddr) -> u8 {
    match ip {
        IpAddr::V4(_) => 32,
        IpAddr::V6(_) => 128,
    }
}

/// `ip` with all but its first `bits` bits cleared (`bits` at most its bit length).
fn mask(ip: &IpAddr, bits: u8) -> IpAddr {
    let keep = |len: u32| if bits == 0 { 0 } else { u128::MAX << (len - u32::from(bits)) };
    match ip {
        IpAddr::V4(v4) => IpAddr::V4(Ipv4Addr::from((u128::from(u32::from(*v4)) & keep(32)) as u32)),
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(*v6) & keep(128))),
    }
}

/// A failure of Go's `netip.ParseAddr`: its explanation and the unparsed rest it points at.
struct AddrError {
    msg: &'static str,
    at: Option<Vec<u8>>,
}

impl AddrError {
    fn new(msg: &'static str) -> AddrError {
        AddrError { msg, at: None }
    }

    fn at(msg: &'static str, rest: &[u8]) -> AddrError {
        AddrError { msg, at: Some(rest.to_vec()) }
    }
}

/// Go's `netip.ParseAddr` of `input`: the address and whether it had a zone (`%zone`, IPv6
/// only); the error is Go's text, `ParseAddr("…"): explanation (at "…")`.
pub(crate) fn go_parse_addr(input: &[u8]) -> Result<(IpAddr, bool), String> {
    parse_addr(input).map_err(|e| {
        let mut text = format!("ParseAddr({}): {}", quote_bytes(input), e.msg);
        if let Some(at) = e.at.filter(|at| !at.is_empty()) {
            text.push_str(&format!(" (at {})", quote_bytes(&at)));
        }
        text
    })
}

fn parse_addr(input: &[u8]) -> Result<(IpAddr, bool), AddrError> {
    for &b in input {
        match b {
            b'.' => return parse_ipv4_fields(input).map(|fields| (IpAddr::V4(Ipv4Addr::from(fields)), false)),
            b':' => return parse_ipv6(input),
            b'%' => return Err(AddrError::new("missing IPv6 address")),
            _ => {}
        }
    }
    Err(AddrError::new("unable to parse IP"))
}

/// Go's `parseIPv4Fields`: four decimal octets, no leading zeros.
fn parse_ipv4_fields(s: &[u8]) -> Result<[u8; 4], AddrError> {
    let mut fields = [0u8; 4];
    let (mut val, mut pos, mut digits) = (0u32, 0usize, 0);
    for (i, &c) in s.iter().enumerate() {
        if c.is_ascii_digit() {
            if digits == 1 && val == 0 {
                return Err(AddrError::new("IPv4 field has octet with leading zero"));
            }
            val = val * 10 + u32::from(c - b'0');
            digits += 1;
            if val > 255 {
                return Err(AddrError::new("IPv4 field has value >255"));
            }
        } else if c == b'.' {
            if i == 0 || i == s.len() - 1 || s[i - 1] == b'.' {
                return Err(AddrError::at("IPv4 field must have at least one digit", &s[i..]));
            }
            if pos == 3 {
                return Err(AddrError::new("IPv4 address too long"));
            }
            fields[pos] = val as u8;
            pos += 1;
            (val, digits) = (0, 0);
        } else {
            return Err(AddrError::at("unexpected character", &s[i..]));
        }
    }
    if pos < 3 {
        return Err(AddrError::new("IPv4 address too short"));
    }
    fields[3] = val as u8;
    Ok(fields)
}

/// Go's `parseIPv6`: colon-separated hex groups, one optional `::`, an optional embedded IPv4
/// tail and an optional non-empty `%zone`.
fn parse_ipv6(input: &[u8]) -> Result<(IpAddr, bool), AddrError> {
    let (mut s, zone) = match input.iter().position(|&b| b == b'%') {
        Some(i) if i + 1 == input.len() => return Err(AddrError::new("zone must be a non-empty string")),
        Some(i) => (&input[..i], true),
        None => (input, false),
    };
    let mut ip = [0u8; 16];
    let mut ellipsis = None;
    if s.starts_with(b"::") {
        ellipsis = Some(0);
        s = &s[2..];
        if s.is_empty() {
            return Ok((IpAddr::V6(Ipv6Addr::UNSPECIFIED), zone));
        }
    }
    let mut i = 0;
    while i < 16 {
        let (group, len) = hex_group(s)?;
        if s.get(len) == Some(&b'.') {
            if ellipsis.is_none() && i != 12 {
                return Err(AddrError::at("embedded IPv4 address must replace the final 2 fields of the address", s));
            }
            if i + 4 > 16 {
                return Err(AddrError::at("too many hex fields to fit an embedded IPv4 at the end of the address", s));
            }
            ip[i..i + 4].copy_from_slice(&parse_ipv4_fields(s)?);
            (s, i) = (&[], i + 4);
            break;
        }
        ip[i..i + 2].copy_from_slice(&group.to_be_bytes());
        i += 2;
        s = &s[len..];
        if s.is_empty() {
            break;
        }
        if s[0] != b':' {
            return Err(AddrError::at("unexpected character, want colon", s));
        } else if s.len() == 1 {
            return Err(AddrError::at("colon must be followed by more characters", s));
        }
        s = &s[1..];
        if s[0] == b':' {
            if ellipsis.is_some() {
                return Err(AddrError::at("multiple :: in address", s));
            }
            ellipsis = Some(i);
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    finish_ipv6(ip, i, ellipsis, s).map(|ip| (IpAddr::V6(ip), zone))
}

/// The leading hex group of `s` (one to four digits) and its length.
fn hex_group(s: &[u8]) -> Result<(u16, usize), AddrError> {
    let mut acc = 0u16;
    let mut len = 0;
    while let Some(digit) = s.get(len).and_then(|c| char::from(*c).to_digit(16)) {
        if len > 3 {
            return Err(AddrError::at("each group must have 4 or less digits", s));
        }
        acc = (acc << 4) | digit as u16;
        len += 1;
    }
    if len == 0 {
        return Err(AddrError::at("each colon-separated field must have at least one digit", s));
    }
    Ok((acc, len))
}

/// The end of Go's `parseIPv6`: no rest, and the `::` expanded to the missing zero groups.
fn finish_ipv6(mut ip: [u8; 16], filled: usize, ellipsis: Option<usize>, rest: &[u8]) -> Result<Ipv6Addr, AddrError> {
    if !rest.is_empty() {
        return Err(AddrError::at("trailing garbage after address", rest));
    }
    if filled < 16 {
        let Some(at) = ellipsis else {
            return Err(AddrError::new("address string too short"));
        };
        let n = 16 - filled;
        ip.copy_within(at..filled, at + n);
        ip[at..at + n].fill(0);
    } else if ellipsis.is_some() {
        return Err(AddrError::new("the :: must expand to at least one field of zeros"));
    }
    Ok(Ipv6Addr::from(ip))
}

/// `text` quoted as Go's `%q` (`strconv.Quote`) quotes it.
pub(crate) fn go_quote(text: &str) -> String {
    quote_bytes(text.as_bytes())
}

pub(crate) use crate::machinery::error::go_quote_bytes as quote_bytes;

#[cfg(test)]
mod tests {
    // Every expected value and error message below is what the reference kube-apiserver CEL
    // (tools/cel-oracle: k8s.io/apiserver v0.37.2, Go 1.26) answered for the expression the
    // table's comment names, applied to the row's input.
    use super::*;

    /// `ip(s)` as the oracle printed `string(ip(s))`, or the CEL error.
    #[rustfmt::skip]
    const PARSE_IP: &[(&str, Result<&str, &str>)] = &[
        ("192.168.0.1", Ok("192.168.0.1")),
        ("0.0.0.0", Ok("0.0.0.0")),
        ("255.255.255.255", Ok("255.255.255.255")),
        ("127.0.0.1", Ok("127.0.0.1")),
        ("256.0.0.1", Err("IP Address \"256.0.0.1\" parse error during conversion from string: ParseAddr(\"256.0.0.1\"): IPv4 field has value >255")),
        ("1.2.3", Err("IP Address \"1.2.3\" parse error during conversion from string: ParseAddr(\"1.2.3\"): IPv4 address too short")),
        ("1.2.3.4.5", Err("IP Address \"1.2.3.4.5\" parse error during conversion from string: ParseAddr(\"1.2.3.4.5\"): IPv4 address too long")),
        ("1..2.3", Err("IP Address \"1..2.3\" parse error during conversion from string: ParseAddr(\"1..2.3\"): IPv4 field must have at least one digit (at \".2.3\")")),
        (".1.2.3", Err("IP Address \".1.2.3\" parse error during conversion from string: ParseAddr(\".1.2.3\"): IPv4 field must have at least one digit (at \".1.2.3\")")),
        ("1.2.3.", Err("IP Address \"1.2.3.\" parse error during conversion from string: ParseAddr(\"1.2.3.\"): IPv4 field must have at least one digit (at \".\")")),
        ("1.2.3.a", Err("IP Address \"1.2.3.a\" parse error during conversion from string: ParseAddr(\"1.2.3.a\"): unexpected character (at \"a\")")),
        ("", Err("IP Address \"\" parse error during conversion from string: ParseAddr(\"\"): unable to parse IP")),
        ("abc", Err("IP Address \"abc\" parse error during conversion from string: ParseAddr(\"abc\"): unable to parse IP")),
        ("%eth0", Err("IP Address \"%eth0\" parse error during conversion from string: ParseAddr(\"%eth0\"): missing IPv6 address")),
        ("1.2.3.4%eth0", Err("IP Address \"1.2.3.4%eth0\" parse error during conversion from string: ParseAddr(\"1.2.3.4%eth0\"): unexpected character (at \"%eth0\")")),
        ("01.1.1.1", Err("IP Address \"01.1.1.1\" parse error during conversion from string: ParseAddr(\"01.1.1.1\"): IPv4 field has octet with leading zero")),
        ("0.0.0.00", Err("IP Address \"0.0.0.00\" parse error during conversion from string: ParseAddr(\"0.0.0.00\"): IPv4 field has octet with leading zero")),
        ("1.2.3.04", Err("IP Address \"1.2.3.04\" parse error during conversion from string: ParseAddr(\"1.2.3.04\"): IPv4 field has octet with leading zero")),
        (" 1.2.3.4", Err("IP Address \" 1.2.3.4\" parse error during conversion from string: ParseAddr(\" 1.2.3.4\"): unexpected character (at \" 1.2.3.4\")")),
        ("1.2.3.4 ", Err("IP Address \"1.2.3.4 \" parse error during conversion from string: ParseAddr(\"1.2.3.4 \"): unexpected character (at \" \")")),
        ("1.2.3.4\n", Err("IP Address \"1.2.3.4\\n\" parse error during conversion from string: ParseAddr(\"1.2.3.4\\n\"): unexpected character (at \"\\n\")")),
        ("é.1.2.3", Err("IP Address \"é.1.2.3\" parse error during conversion from string: ParseAddr(\"é.1.2.3\"): unexpected character (at \"é.1.2.3\")")),
        ("1.2.3.4:80", Err("IP Address \"1.2.3.4:80\" parse error during conversion from string: ParseAddr(\"1.2.3.4:80\"): unexpected character (at \":80\")")),
        ("[::1]", Err("IP Address \"[::1]\" parse error during conversion from string: ParseAddr(\"[::1]\"): each colon-separated field must have at least one digit (at \"[::1]\")")),
        ("::1", Ok("::1")),
        ("::", Ok("::")),
        ("2001:db8::1", Ok("2001:db8::1")),
        ("2001:DB8::1", Ok("2001:db8::1")),
        ("2001:db8:0:0:0:0:0:1", Ok("2001:db8::1")),
        ("2001:0db8:0000:0000:0000:0000:0000:0001", Ok("2001:db8::1")),
        ("fe80::1%eth0", Err("IP address \"fe80::1%eth0\" with zone value is not allowed")),
        ("fe80::1%", Err("IP Address \"fe80::1%\" parse error during conversion from string: ParseAddr(\"fe80::1%\"): zone must be a non-empty string")),
        ("::ffff:1.2.3.4", Err("IPv4-mapped IPv6 address \"::ffff:1.2.3.4\" is not allowed")),
        ("::ffff:c0a8:1", Err("IPv4-mapped IPv6 address \"::ffff:c0a8:1\" is not allowed")),
        ("0:0:0:0:0:ffff:102:304", Err("IPv4-mapped IPv6 address \"0:0:0:0:0:ffff:102:304\" is not allowed")),
        ("::1.2.3.4", Ok("::102:304")),
        ("1:2:3:4:5:6:1.2.3.4", Ok("1:2:3:4:5:6:102:304")),
        ("1:2:3:4:5:1.2.3.4", Err("IP Address \"1:2:3:4:5:1.2.3.4\" parse error during conversion from string: ParseAddr(\"1:2:3:4:5:1.2.3.4\"): embedded IPv4 address must replace the final 2 fields of the address (at \"1.2.3.4\")")),
        ("1:2:3:4:5:6:7:1.2.3.4", Err("IP Address \"1:2:3:4:5:6:7:1.2.3.4\" parse error during conversion from string: ParseAddr(\"1:2:3:4:5:6:7:1.2.3.4\"): embedded IPv4 address must replace the final 2 fields of the address (at \"1.2.3.4\")")),
        ("::1.2.3", Err("IP Address \"::1.2.3\" parse error during conversion from string: ParseAddr(\"::1.2.3\"): IPv4 address too short")),
        ("::01.2.3.4", Err("IP Address \"::01.2.3.4\" parse error during conversion from string: ParseAddr(\"::01.2.3.4\"): IPv4 field has octet with leading zero")),
        ("12345::1", Err("IP Address \"12345::1\" parse error during conversion from string: ParseAddr(\"12345::1\"): each group must have 4 or less digits (at \"12345::1\")")),
        ("1:2:3:4:5:6:7:8:9", Err("IP Address \"1:2:3:4:5:6:7:8:9\" parse error during conversion from string: ParseAddr(\"1:2:3:4:5:6:7:8:9\"): trailing garbage after address (at \"9\")")),
        ("1:2:3:4:5:6:7", Err("IP Address \"1:2:3:4:5:6:7\" parse error during conversion from string: ParseAddr(\"1:2:3:4:5:6:7\"): address string too short")),
        ("1::2::3", Err("IP Address \"1::2::3\" parse error during conversion from string: ParseAddr(\"1::2::3\"): multiple :: in address (at \":3\")")),
        ("1:2:3:4:5:6:7::", Ok("1:2:3:4:5:6:7:0")),
        ("1:2:3:4:5:6:7:8::", Err("IP Address \"1:2:3:4:5:6:7:8::\" parse error during conversion from string: ParseAddr(\"1:2:3:4:5:6:7:8::\"): the :: must expand to at least one field of zeros")),
        (":1::2", Err("IP Address \":1::2\" parse error during conversion from string: ParseAddr(\":1::2\"): each colon-separated field must have at least one digit (at \":1::2\")")),
        ("1:", Err("IP Address \"1:\" parse error during conversion from string: ParseAddr(\"1:\"): colon must be followed by more characters (at \":\")")),
        ("::g", Err("IP Address \"::g\" parse error during conversion from string: ParseAddr(\"::g\"): each colon-separated field must have at least one digit (at \"g\")")),
        ("fffff::", Err("IP Address \"fffff::\" parse error during conversion from string: ParseAddr(\"fffff::\"): each group must have 4 or less digits (at \"fffff::\")")),
        ("1:2:3:4:5:6:7:8", Ok("1:2:3:4:5:6:7:8")),
        ("1:0:0:2:0:0:0:3", Ok("1:0:0:2::3")),
        ("0:0:1:0:0:1:0:0", Ok("::1:0:0:1:0:0")),
        ("1:0:1:0:1:0:1:0", Ok("1:0:1:0:1:0:1:0")),
        ("::ffff:1.2.3.4%z", Err("IP address \"::ffff:1.2.3.4%z\" with zone value is not allowed")),
        ("1::%25", Err("IP address \"1::%25\" with zone value is not allowed")),
        ("\u{200b}1.2.3.4", Err("IP Address \"\\u200b1.2.3.4\" parse error during conversion from string: ParseAddr(\"\\u200b1.2.3.4\"): unexpected character (at \"\\u200b1.2.3.4\")")),
        (":::", Err("IP Address \":::\" parse error during conversion from string: ParseAddr(\":::\"): each colon-separated field must have at least one digit (at \":\")")),
        ("1.2.3.4/8", Err("IP Address \"1.2.3.4/8\" parse error during conversion from string: ParseAddr(\"1.2.3.4/8\"): unexpected character (at \"/8\")")),
        ("1.2.3.4́", Err("IP Address \"1.2.3.4́\" parse error during conversion from string: ParseAddr(\"1.2.3.4́\"): unexpected character (at \"́\")")),
    ];
    /// `ip.isCanonical(s)`.
    #[rustfmt::skip]
    const CANONICAL: &[(&str, Result<bool, &str>)] = &[
        ("127.0.0.1", Ok(true)),
        ("10.0.0.1", Ok(true)),
        ("0.0.0.0", Ok(true)),
        ("2001:db8::1", Ok(true)),
        ("2001:DB8::1", Ok(false)),
        ("2001:db8:0:0:0:0:0:1", Ok(false)),
        ("2001:0db8::1", Ok(false)),
        ("::1", Ok(true)),
        ("0::1", Ok(false)),
        ("::", Ok(true)),
        ("0::0", Ok(false)),
        ("1:0:0:1:0:0:0:1", Ok(false)),
        ("1::1:0:0:0:1", Ok(false)),
        ("1:0:0:1::1", Ok(true)),
        ("0:0:1:0:0:1:0:0", Ok(false)),
        ("::1:0:0:1:0:0", Ok(true)),
        ("1:2:3:4:5:6:7:0", Ok(true)),
        ("1:2:3:4:5:6::7", Ok(false)),
        ("1:2:3:4:5:6:7::", Ok(false)),
        ("1::", Ok(true)),
        ("1:0::", Ok(false)),
        ("fe80::1", Ok(true)),
        ("FE80::1", Ok(false)),
        ("fe80:0::1", Ok(false)),
        ("fe80::0:1", Ok(false)),
        ("::102:304", Ok(true)),
        ("::1.2.3.4", Ok(false)),
        ("1:2:3:4:5:6:102:304", Ok(true)),
        ("1:2:3:4:5:6:1.2.3.4", Ok(false)),
        ("ff02::1", Ok(true)),
        ("ff02:0:0:0:0:0:0:1", Ok(false)),
        ("2001:db8::", Ok(true)),
        ("2001:db8:0::", Ok(false)),
        ("a:b:c:d:e:f:0:0", Ok(false)),
        ("a:b:c:d:e:f::", Ok(true)),
        ("0:a:0:0:b:0:0:0", Ok(false)),
        ("0:a::b:0:0:0", Ok(false)),
        ("::ffff:1.2.3.4", Err("IPv4-mapped IPv6 address \"::ffff:1.2.3.4\" is not allowed")),
        ("01.2.3.4", Err("IP Address \"01.2.3.4\" parse error during conversion from string: ParseAddr(\"01.2.3.4\"): IPv4 field has octet with leading zero")),
        ("fe80::1%eth0", Err("IP address \"fe80::1%eth0\" with zone value is not allowed")),
        ("", Err("IP Address \"\" parse error during conversion from string: ParseAddr(\"\"): unable to parse IP")),
        ("nope", Err("IP Address \"nope\" parse error during conversion from string: ParseAddr(\"nope\"): unable to parse IP")),
        ("1.2.3", Err("IP Address \"1.2.3\" parse error during conversion from string: ParseAddr(\"1.2.3\"): IPv4 address too short")),
        ("::1%lo", Err("IP address \"::1%lo\" with zone value is not allowed")),
        ("255.255.255.255", Ok(true)),
        ("192.168.000.1", Err("IP Address \"192.168.000.1\" parse error during conversion from string: ParseAddr(\"192.168.000.1\"): IPv4 field has octet with leading zero")),
        ("1:2:3:4:5:6:7:8", Ok(true)),
        ("abcd::ef", Ok(true)),
        ("1.2.3.4", Ok(true)),
        ("::a", Ok(true)),
        ("::A", Ok(false)),
    ];
    /// `ip(s).family()` and `[isUnspecified, isLoopback, isLinkLocalMulticast, isLinkLocalUnicast, isGlobalUnicast]`.
    #[rustfmt::skip]
    const PREDICATES: &[(&str, i64, [bool; 5])] = &[
        ("127.0.0.1", 4, [false, true, false, false, false]),
        ("127.255.0.1", 4, [false, true, false, false, false]),
        ("128.0.0.1", 4, [false, false, false, false, true]),
        ("10.0.0.1", 4, [false, false, false, false, true]),
        ("8.8.8.8", 4, [false, false, false, false, true]),
        ("0.0.0.0", 4, [true, false, false, false, false]),
        ("0.0.0.1", 4, [false, false, false, false, true]),
        ("255.255.255.255", 4, [false, false, false, false, false]),
        ("255.255.255.254", 4, [false, false, false, false, true]),
        ("169.254.0.1", 4, [false, false, false, true, false]),
        ("169.254.255.255", 4, [false, false, false, true, false]),
        ("169.253.0.1", 4, [false, false, false, false, true]),
        ("224.0.0.1", 4, [false, false, true, false, false]),
        ("224.0.0.255", 4, [false, false, true, false, false]),
        ("224.0.1.1", 4, [false, false, false, false, false]),
        ("239.255.255.255", 4, [false, false, false, false, false]),
        ("240.0.0.1", 4, [false, false, false, false, true]),
        ("192.168.1.1", 4, [false, false, false, false, true]),
        ("172.16.0.1", 4, [false, false, false, false, true]),
        ("100.64.0.1", 4, [false, false, false, false, true]),
        ("::", 6, [true, false, false, false, false]),
        ("::1", 6, [false, true, false, false, false]),
        ("::2", 6, [false, false, false, false, true]),
        ("::1.2.3.4", 6, [false, false, false, false, true]),
        ("fe80::", 6, [false, false, false, true, false]),
        ("fe80::1", 6, [false, false, false, true, false]),
        ("febf:ffff::1", 6, [false, false, false, true, false]),
        ("fec0::1", 6, [false, false, false, false, true]),
        ("fc00::1", 6, [false, false, false, false, true]),
        ("fd00::1", 6, [false, false, false, false, true]),
        ("2001:db8::1", 6, [false, false, false, false, true]),
        ("2000::", 6, [false, false, false, false, true]),
        ("3fff::1", 6, [false, false, false, false, true]),
        ("4000::1", 6, [false, false, false, false, true]),
        ("ff00::1", 6, [false, false, false, false, false]),
        ("ff01::1", 6, [false, false, false, false, false]),
        ("ff02::1", 6, [false, false, true, false, false]),
        ("ff12::1", 6, [false, false, true, false, false]),
        ("ff32::1", 6, [false, false, true, false, false]),
        ("ff05::2", 6, [false, false, false, false, false]),
        ("ff0e::1", 6, [false, false, false, false, false]),
        ("fe7f::1", 6, [false, false, false, false, true]),
        ("1::", 6, [false, false, false, false, true]),
        ("::fffe:0:1", 6, [false, false, false, false, true]),
        ("::fffe:1.2.3.4", 6, [false, false, false, false, true]),
        ("ffff::", 6, [false, false, false, false, false]),
        ("64:ff9b::1.2.3.4", 6, [false, false, false, false, true]),
        ("2002::1", 6, [false, false, false, false, true]),
        ("1.1.1.1", 4, [false, false, false, false, true]),
        ("127.0.0.0", 4, [false, true, false, false, false]),
    ];
    /// `cidr(s)`: `string(c)`, `string(c.masked())`, `c.prefixLength()`, `string(c.ip())`, or the CEL error.
    #[rustfmt::skip]
    #[allow(clippy::type_complexity)]
    const CIDRS: &[(&str, Result<(&str, &str, i64, &str), &str>)] = &[
        ("10.0.0.0/8", Ok(("10.0.0.0/8", "10.0.0.0/8", 8, "10.0.0.0"))),
        ("10.1.2.3/8", Ok(("10.1.2.3/8", "10.0.0.0/8", 8, "10.1.2.3"))),
        ("10.0.0.0", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"10.0.0.0\"): no '/'")),
        ("10.0.0.0/33", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"10.0.0.0/33\"): prefix length out of range")),
        ("10.0.0.0/-1", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"10.0.0.0/-1\"): bad bits after slash: \"-1\"")),
        ("10.0.0.0/", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"10.0.0.0/\"): bad bits after slash: \"\"")),
        ("10.0.0.0/08", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"10.0.0.0/08\"): bad bits after slash: \"08\"")),
        ("10.0.0.0/+8", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"10.0.0.0/+8\"): bad bits after slash: \"+8\"")),
        ("10.0.0.0/0", Ok(("10.0.0.0/0", "0.0.0.0/0", 0, "10.0.0.0"))),
        ("10.0.0.0/00", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"10.0.0.0/00\"): bad bits after slash: \"00\"")),
        ("10.0.0.0/32", Ok(("10.0.0.0/32", "10.0.0.0/32", 32, "10.0.0.0"))),
        ("10.0.0.0/99999999999999999999", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"10.0.0.0/99999999999999999999\"): bad bits after slash: \"99999999999999999999\"")),
        ("10.0.0.0/9223372036854775808", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"10.0.0.0/9223372036854775808\"): bad bits after slash: \"9223372036854775808\"")),
        ("10.0.0.0/8/8", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"10.0.0.0/8/8\"): ParseAddr(\"10.0.0.0/8\"): unexpected character (at \"/8\")")),
        ("::/0", Ok(("::/0", "::/0", 0, "::"))),
        ("::/128", Ok(("::/128", "::/128", 128, "::"))),
        ("::/129", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"::/129\"): prefix length out of range")),
        ("2001:db8::/32", Ok(("2001:db8::/32", "2001:db8::/32", 32, "2001:db8::"))),
        ("2001:DB8::1/32", Ok(("2001:db8::1/32", "2001:db8::/32", 32, "2001:db8::1"))),
        ("2001:db8::1/129", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"2001:db8::1/129\"): prefix length out of range")),
        ("2001:db8::1/128", Ok(("2001:db8::1/128", "2001:db8::1/128", 128, "2001:db8::1"))),
        ("2001:db8::ffff/120", Ok(("2001:db8::ffff/120", "2001:db8::ff00/120", 120, "2001:db8::ffff"))),
        ("2001:db8::ffff/127", Ok(("2001:db8::ffff/127", "2001:db8::fffe/127", 127, "2001:db8::ffff"))),
        ("fe80::1%eth0/64", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"fe80::1%eth0/64\"): IPv6 zones cannot be present in a prefix")),
        ("::ffff:1.2.3.4/120", Err("network address parse error during conversion from string: IPv4-mapped IPv6 address \"::ffff:1.2.3.4/120\" is not allowed")),
        ("::ffff:0:0/96", Err("network address parse error during conversion from string: IPv4-mapped IPv6 address \"::ffff:0:0/96\" is not allowed")),
        ("::fffe:0:0/95", Ok(("::fffe:0:0/95", "::fffe:0:0/95", 95, "::fffe:0:0"))),
        ("01.0.0.0/8", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"01.0.0.0/8\"): ParseAddr(\"01.0.0.0\"): IPv4 field has octet with leading zero")),
        ("", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"\"): no '/'")),
        ("/8", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"/8\"): ParseAddr(\"\"): unable to parse IP")),
        ("/", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"/\"): ParseAddr(\"\"): unable to parse IP")),
        ("abc/8", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"abc/8\"): ParseAddr(\"abc\"): unable to parse IP")),
        ("1.2.3.4/ 8", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"1.2.3.4/ 8\"): bad bits after slash: \" 8\"")),
        ("1.2.3.4/8 ", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"1.2.3.4/8 \"): bad bits after slash: \"8 \"")),
        ("1.2.3.4/a", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"1.2.3.4/a\"): bad bits after slash: \"a\"")),
        ("1.2.3.4//8", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"1.2.3.4//8\"): ParseAddr(\"1.2.3.4/\"): unexpected character (at \"/\")")),
        ("1.2.3.4/0x8", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"1.2.3.4/0x8\"): bad bits after slash: \"0x8\"")),
        ("192.168.1.77/24", Ok(("192.168.1.77/24", "192.168.1.0/24", 24, "192.168.1.77"))),
        ("192.168.1.77/25", Ok(("192.168.1.77/25", "192.168.1.0/25", 25, "192.168.1.77"))),
        ("192.168.1.77/31", Ok(("192.168.1.77/31", "192.168.1.76/31", 31, "192.168.1.77"))),
        ("255.255.255.255/1", Ok(("255.255.255.255/1", "128.0.0.0/1", 1, "255.255.255.255"))),
        ("255.255.255.255/0", Ok(("255.255.255.255/0", "0.0.0.0/0", 0, "255.255.255.255"))),
        ("0.0.0.0/0", Ok(("0.0.0.0/0", "0.0.0.0/0", 0, "0.0.0.0"))),
        ("128.0.0.0/1", Ok(("128.0.0.0/1", "128.0.0.0/1", 1, "128.0.0.0"))),
        ("8000::/1", Ok(("8000::/1", "8000::/1", 1, "8000::"))),
        ("ffff::1/15", Ok(("ffff::1/15", "fffe::/15", 15, "ffff::1"))),
        ("fe80::1/10", Ok(("fe80::1/10", "fe80::/10", 10, "fe80::1"))),
        ("1:2:3:4:5:6:7:8/64", Ok(("1:2:3:4:5:6:7:8/64", "1:2:3:4::/64", 64, "1:2:3:4:5:6:7:8"))),
        ("1:2:3:4:5:6:7:8/65", Ok(("1:2:3:4:5:6:7:8/65", "1:2:3:4::/65", 65, "1:2:3:4:5:6:7:8"))),
        ("1.2.3.4/32", Ok(("1.2.3.4/32", "1.2.3.4/32", 32, "1.2.3.4"))),
        ("::1.2.3.4/100", Ok(("::102:304/100", "::/100", 100, "::102:304"))),
        ("10.0.0.256/8", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"10.0.0.256/8\"): ParseAddr(\"10.0.0.256\"): IPv4 field has value >255")),
        ("10.0.0.0/8%", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"10.0.0.0/8%\"): bad bits after slash: \"8%\"")),
        ("::1%/64", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"::1%/64\"): ParseAddr(\"::1%\"): zone must be a non-empty string")),
        ("a::/1", Ok(("a::/1", "::/1", 1, "a::"))),
        ("1.2.3.4/٣", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"1.2.3.4/٣\"): bad bits after slash: \"٣\"")),
        ("1.2.3.4/1 0", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"1.2.3.4/1 0\"): bad bits after slash: \"1 0\"")),
        ("::1/0", Ok(("::1/0", "::/0", 0, "::1"))),
    ];
    /// `cidr(c).containsIP(s)` with a string.
    #[rustfmt::skip]
    const CONTAINS_IP: &[(&str, &str, Result<bool, &str>)] = &[
        ("10.0.0.0/8", "10.1.2.3", Ok(true)),
        ("10.0.0.0/8", "11.1.2.3", Ok(false)),
        ("10.0.0.0/8", "10.255.255.255", Ok(true)),
        ("10.0.0.0/8", "9.255.255.255", Ok(false)),
        ("10.1.2.3/8", "10.200.0.0", Ok(true)),
        ("10.0.0.0/8", "::1", Ok(false)),
        ("10.0.0.0/8", "::a00:1", Ok(false)),
        ("::/0", "1.2.3.4", Ok(false)),
        ("::/0", "::ffff:1.2.3.4", Err("no such overload")),
        ("10.0.0.0/8", "bad", Err("no such overload")),
        ("10.0.0.0/8", "", Err("no such overload")),
        ("10.0.0.0/8", "fe80::1%eth0", Err("no such overload")),
        ("10.0.0.0/8", "010.1.2.3", Err("no such overload")),
        ("0.0.0.0/0", "255.255.255.255", Ok(true)),
        ("0.0.0.0/0", "0.0.0.0", Ok(true)),
        ("0.0.0.0/0", "::", Ok(false)),
        ("::/0", "::", Ok(true)),
        ("::/0", "ffff::1", Ok(true)),
        ("2001:db8::/32", "2001:db8:ffff::1", Ok(true)),
        ("2001:db8::/32", "2001:db9::1", Ok(false)),
        ("2001:db8::/32", "2001:DB8::", Ok(true)),
        ("2001:db8::1/128", "2001:db8::1", Ok(true)),
        ("2001:db8::1/128", "2001:db8::2", Ok(false)),
        ("2001:db8::1/127", "2001:db8::", Ok(true)),
        ("2001:db8::2/127", "2001:db8::1", Ok(false)),
        ("192.168.1.0/24", "192.168.1.255", Ok(true)),
        ("192.168.1.0/24", "192.168.2.0", Ok(false)),
        ("192.168.1.77/24", "192.168.1.1", Ok(true)),
        ("192.168.1.128/25", "192.168.1.127", Ok(false)),
        ("192.168.1.128/25", "192.168.1.128", Ok(true)),
        ("1.2.3.4/32", "1.2.3.4", Ok(true)),
        ("1.2.3.4/32", "1.2.3.5", Ok(false)),
        ("1.2.3.4/31", "1.2.3.5", Ok(true)),
        ("1.2.3.4/31", "1.2.3.6", Ok(false)),
        ("128.0.0.0/1", "127.255.255.255", Ok(false)),
        ("128.0.0.0/1", "200.0.0.1", Ok(true)),
        ("8000::/1", "7fff::", Ok(false)),
        ("8000::/1", "ffff::", Ok(true)),
        ("fe80::/10", "febf::1", Ok(true)),
        ("fe80::/10", "fec0::1", Ok(false)),
        ("fc00::/7", "fd12::1", Ok(true)),
        ("fc00::/7", "fe00::1", Ok(false)),
        ("169.254.0.0/16", "169.254.3.4", Ok(true)),
        ("169.254.0.0/16", "169.255.3.4", Ok(false)),
        ("::1/128", "::1", Ok(true)),
        ("::1/128", "0.0.0.1", Ok(false)),
        ("::/96", "::1.2.3.4", Ok(true)),
        ("::/96", "::1:0:0", Ok(false)),
        ("100.64.0.0/10", "100.127.255.255", Ok(true)),
        ("100.64.0.0/10", "100.128.0.0", Ok(false)),
        ("10.0.0.0/8", "10.1.2.3.4", Err("no such overload")),
        ("10.0.0.0/8", " 10.1.2.3", Err("no such overload")),
    ];
    /// `cidr(c).containsCIDR(s)` with a string.
    #[rustfmt::skip]
    const CONTAINS_CIDR: &[(&str, &str, Result<bool, &str>)] = &[
        ("10.0.0.0/8", "10.1.0.0/16", Ok(true)),
        ("10.0.0.0/8", "10.0.0.0/8", Ok(true)),
        ("10.0.0.0/16", "10.0.0.0/8", Ok(false)),
        ("10.0.0.0/8", "11.0.0.0/16", Ok(false)),
        ("10.0.0.0/8", "bad", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"bad\"): no '/'")),
        ("10.0.0.0/8", "10.0.0.0/33", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"10.0.0.0/33\"): prefix length out of range")),
        ("10.0.0.0/8", "::ffff:10.0.0.0/104", Err("network address parse error during conversion from string: IPv4-mapped IPv6 address \"::ffff:10.0.0.0/104\" is not allowed")),
        ("10.0.0.0/8", "::/0", Ok(false)),
        ("::/0", "2001:db8::/32", Ok(true)),
        ("::/0", "0.0.0.0/0", Ok(false)),
        ("0.0.0.0/0", "0.0.0.0/0", Ok(true)),
        ("0.0.0.0/0", "255.255.255.255/32", Ok(true)),
        ("0.0.0.0/0", "::/0", Ok(false)),
        ("10.1.2.3/8", "10.9.9.9/32", Ok(true)),
        ("10.1.2.3/32", "10.1.2.4/32", Ok(false)),
        ("10.1.2.3/32", "10.1.2.3/32", Ok(true)),
        ("10.1.2.3/32", "10.1.2.3/31", Ok(false)),
        ("10.1.2.3/31", "10.1.2.2/32", Ok(true)),
        ("10.1.2.3/8", "10.1.2.3/8", Ok(true)),
        ("10.1.2.3/8", "10.0.0.0/8", Ok(true)),
        ("10.0.0.0/8", "10.1.2.3/8", Ok(true)),
        ("192.168.0.0/16", "192.168.1.0/24", Ok(true)),
        ("192.168.0.0/16", "192.169.0.0/24", Ok(false)),
        ("192.168.0.0/24", "192.168.0.0/16", Ok(false)),
        ("192.168.1.0/24", "192.168.1.128/25", Ok(true)),
        ("192.168.1.128/25", "192.168.1.0/24", Ok(false)),
        ("2001:db8::/32", "2001:db8:1::/48", Ok(true)),
        ("2001:db8::/32", "2001:db9::/48", Ok(false)),
        ("2001:db8::/32", "2001:db8::/31", Ok(false)),
        ("2001:db8::/32", "2001:db8::/32", Ok(true)),
        ("2001:db8::/32", "2001:DB8::1/128", Ok(true)),
        ("2001:db8::1/128", "2001:db8::1/128", Ok(true)),
        ("2001:db8::1/128", "2001:db8::/128", Ok(false)),
        ("fe80::/10", "fe80::1/64", Ok(true)),
        ("fe80::/10", "fec0::/10", Ok(false)),
        ("fe80::/10", "fe80::/9", Ok(false)),
        ("fc00::/7", "fd00::/8", Ok(true)),
        ("8000::/1", "ffff::/16", Ok(true)),
        ("8000::/1", "::/1", Ok(false)),
        ("128.0.0.0/1", "0.0.0.0/1", Ok(false)),
        ("128.0.0.0/1", "128.0.0.0/2", Ok(true)),
        ("10.0.0.0/8", "", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"\"): no '/'")),
        ("10.0.0.0/8", "10.0.0.0", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"10.0.0.0\"): no '/'")),
        ("10.0.0.0/8", "10.0.0.0/08", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"10.0.0.0/08\"): bad bits after slash: \"08\"")),
        ("::/0", "fe80::1%eth0/64", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"fe80::1%eth0/64\"): IPv6 zones cannot be present in a prefix")),
        ("::/0", "::1/129", Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"::1/129\"): prefix length out of range")),
        ("1.2.3.4/32", "1.2.3.4/32", Ok(true)),
        ("1.2.3.4/32", "1.2.3.0/24", Ok(false)),
        ("1.2.3.0/24", "1.2.3.4/32", Ok(true)),
        ("100.64.0.0/10", "100.100.0.0/16", Ok(true)),
        ("100.64.0.0/10", "100.0.0.0/8", Ok(false)),
    ];

    #[test]
    fn ips_parse_and_print_as_cel_does() {
        for (input, want) in PARSE_IP {
            let got = parse_ip(input).map(|ip| ip_string(&ip));
            assert_eq!(got.as_deref().map_err(String::as_str), *want, "ip({input:?})");
            assert_eq!(is_ip(input), want.is_ok(), "isIP({input:?})");
        }
    }

    #[test]
    fn canonical_spellings() {
        for (input, want) in CANONICAL {
            assert_eq!(is_canonical(input).as_ref().copied().map_err(String::as_str), *want, "{input:?}");
        }
    }

    #[test]
    fn families_and_predicates() {
        for (input, want_family, want) in PREDICATES {
            let Ok(ip) = parse_ip(input) else { panic!("ip({input:?}) failed") };
            assert_eq!(family(&ip), *want_family, "{input:?}");
            let got = [
                is_unspecified(&ip),
                is_loopback(&ip),
                is_link_local_multicast(&ip),
                is_link_local_unicast(&ip),
                is_global_unicast(&ip),
            ];
            assert_eq!(got, *want, "{input:?}");
        }
    }

    #[test]
    fn cidrs_parse_mask_and_print_as_cel_does() {
        for (input, want) in CIDRS {
            let got = Cidr::parse(input);
            assert_eq!(Cidr::is_cidr(input), want.is_ok(), "isCIDR({input:?})");
            match (got, want) {
                (Ok(cidr), Ok((string, masked, prefix, ip))) => {
                    assert_eq!(cidr.to_string(), *string, "{input:?}");
                    assert_eq!(cidr.masked().to_string(), *masked, "{input:?}");
                    assert_eq!(cidr.prefix_length(), *prefix, "{input:?}");
                    assert_eq!(ip_string(&cidr.ip()), *ip, "{input:?}");
                    assert_eq!(cidr.size(), (prefix + 7) / 8, "{input:?}");
                }
                (Err(got), Err(want)) => assert_eq!(got, *want, "{input:?}"),
                (got, want) => panic!("cidr({input:?}): {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn cidrs_contain_ips() {
        for (cidr, probe, want) in CONTAINS_IP {
            let Ok(cidr) = Cidr::parse(cidr) else { panic!("cidr({cidr:?}) failed") };
            let got = cidr.contains_ip_str(probe);
            assert_eq!(got.as_ref().copied().map_err(String::as_str), *want, "{cidr}.containsIP({probe:?})");
            if let Ok(ip) = parse_ip(probe) {
                assert_eq!(Ok(cidr.contains_ip(&ip)), *want, "{cidr}.containsIP(ip({probe:?}))");
            }
        }
    }

    #[test]
    fn cidrs_contain_cidrs() {
        for (cidr, other, want) in CONTAINS_CIDR {
            let Ok(cidr) = Cidr::parse(cidr) else { panic!("cidr({cidr:?}) failed") };
            let got = cidr.contains_cidr_str(other);
            assert_eq!(got.as_ref().copied().map_err(String::as_str), *want, "{cidr}.containsCIDR({other:?})");
            if let Ok(other_cidr) = Cidr::parse(other) {
                assert_eq!(Ok(cidr.contains_cidr(&other_cidr)), *want, "{cidr}.containsCIDR(cidr({other:?}))");
            }
        }
    }

    #[test]
    fn ipv4_mapped_addresses_print_as_go_does() {
        // Not reachable through ip() (it rejects them), but Go's form all the same.
        let mapped: IpAddr = Ipv4Addr::new(1, 2, 3, 4).to_ipv6_mapped().into();
        assert_eq!(ip_string(&mapped), "::ffff:1.2.3.4");
        assert!(is_loopback(&Ipv4Addr::LOCALHOST.to_ipv6_mapped().into()));
        assert_eq!(quote_bytes(b"a\xff\n\xcc\x81"), "\"a\\xff\\n\u{301}\"");
    }
}
