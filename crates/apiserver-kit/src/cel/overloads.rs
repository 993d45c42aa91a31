//! The functions of Kubernetes' CEL environment and their overloads' signatures, against which
//! cel-go's checker resolves each call: cel-go's standard library, its strings (version 2), lists
//! (3), sets, optional-types and two-variable comprehension extensions, and Kubernetes' libraries
//! (lists, regex, URLs, IPs and CIDRs, quantities, semver, named formats, authorization). The
//! table is `tools/cel-oracle -declarations`, less what the evaluator does not implement (the
//! strings extension's `format`) and cel-go's internal names (`_in_`, `in`,
//! `__not_strictly_false__`, `_?._`, which the checker handles itself); tests/cel_declarations.rs
//! keeps it current.

use super::decls::{CelType, library_object};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

/// One overload: `name id [<type parameters> ][.](parameters) -> result`, a dot marking a
/// member overload (its first parameter is the target), functions by name and each function's
/// overloads in cel-go's order (the first that fits gives a call its type); type parameters
/// sorted (cel-go instantiates them in a Go map's order).
const SIGNATURES: &[&str] = &[
    "!_ logical_not (bool) -> bool",
    "-_ negate_double (double) -> double",
    "-_ negate_int64 (int) -> int",
    "@in in_list <A> (A, list(A)) -> bool",
    "@in in_map <A B> (A, map(A, B)) -> bool",
    "@not_strictly_false not_strictly_false (bool) -> bool",
    "@sortByAssociatedKeys list_int_sortByAssociatedKeys <T> .(list(T), list(int)) -> list(T)",
    "@sortByAssociatedKeys list_uint_sortByAssociatedKeys <T> .(list(T), list(uint)) -> list(T)",
    "@sortByAssociatedKeys list_double_sortByAssociatedKeys <T> .(list(T), list(double)) -> list(T)",
    "@sortByAssociatedKeys list_bool_sortByAssociatedKeys <T> .(list(T), list(bool)) -> list(T)",
    "@sortByAssociatedKeys list_google.protobuf.Duration_sortByAssociatedKeys <T> .(list(T), list(duration)) -> list(T)",
    "@sortByAssociatedKeys list_google.protobuf.Timestamp_sortByAssociatedKeys <T> .(list(T), list(timestamp)) -> list(T)",
    "@sortByAssociatedKeys list_string_sortByAssociatedKeys <T> .(list(T), list(string)) -> list(T)",
    "@sortByAssociatedKeys list_bytes_sortByAssociatedKeys <T> .(list(T), list(bytes)) -> list(T)",
    "_!=_ not_equals <A> (A, A) -> bool",
    "_%_ modulo_int64 (int, int) -> int",
    "_%_ modulo_uint64 (uint, uint) -> uint",
    "_&&_ logical_and (bool, bool) -> bool",
    "_*_ multiply_double (double, double) -> double",
    "_*_ multiply_int64 (int, int) -> int",
    "_*_ multiply_uint64 (uint, uint) -> uint",
    "_+_ add_bytes (bytes, bytes) -> bytes",
    "_+_ add_double (double, double) -> double",
    "_+_ add_duration_duration (duration, duration) -> duration",
    "_+_ add_duration_timestamp (duration, timestamp) -> timestamp",
    "_+_ add_timestamp_duration (timestamp, duration) -> timestamp",
    "_+_ add_int64 (int, int) -> int",
    "_+_ add_list <A> (list(A), list(A)) -> list(A)",
    "_+_ add_string (string, string) -> string",
    "_+_ add_uint64 (uint, uint) -> uint",
    "_-_ subtract_double (double, double) -> double",
    "_-_ subtract_duration_duration (duration, duration) -> duration",
    "_-_ subtract_int64 (int, int) -> int",
    "_-_ subtract_timestamp_duration (timestamp, duration) -> timestamp",
    "_-_ subtract_timestamp_timestamp (timestamp, timestamp) -> duration",
    "_-_ subtract_uint64 (uint, uint) -> uint",
    "_/_ divide_double (double, double) -> double",
    "_/_ divide_int64 (int, int) -> int",
    "_/_ divide_uint64 (uint, uint) -> uint",
    "_<=_ less_equals_bool (bool, bool) -> bool",
    "_<=_ less_equals_int64 (int, int) -> bool",
    "_<=_ less_equals_int64_double (int, double) -> bool",
    "_<=_ less_equals_int64_uint64 (int, uint) -> bool",
    "_<=_ less_equals_uint64 (uint, uint) -> bool",
    "_<=_ less_equals_uint64_double (uint, double) -> bool",
    "_<=_ less_equals_uint64_int64 (uint, int) -> bool",
    "_<=_ less_equals_double (double, double) -> bool",
    "_<=_ less_equals_double_int64 (double, int) -> bool",
    "_<=_ less_equals_double_uint64 (double, uint) -> bool",
    "_<=_ less_equals_string (string, string) -> bool",
    "_<=_ less_equals_bytes (bytes, bytes) -> bool",
    "_<=_ less_equals_timestamp (timestamp, timestamp) -> bool",
    "_<=_ less_equals_duration (duration, duration) -> bool",
    "_<_ less_bool (bool, bool) -> bool",
    "_<_ less_int64 (int, int) -> bool",
    "_<_ less_int64_double (int, double) -> bool",
    "_<_ less_int64_uint64 (int, uint) -> bool",
    "_<_ less_uint64 (uint, uint) -> bool",
    "_<_ less_uint64_double (uint, double) -> bool",
    "_<_ less_uint64_int64 (uint, int) -> bool",
    "_<_ less_double (double, double) -> bool",
    "_<_ less_double_int64 (double, int) -> bool",
    "_<_ less_double_uint64 (double, uint) -> bool",
    "_<_ less_string (string, string) -> bool",
    "_<_ less_bytes (bytes, bytes) -> bool",
    "_<_ less_timestamp (timestamp, timestamp) -> bool",
    "_<_ less_duration (duration, duration) -> bool",
    "_==_ equals <A> (A, A) -> bool",
    "_>=_ greater_equals_bool (bool, bool) -> bool",
    "_>=_ greater_equals_int64 (int, int) -> bool",
    "_>=_ greater_equals_int64_double (int, double) -> bool",
    "_>=_ greater_equals_int64_uint64 (int, uint) -> bool",
    "_>=_ greater_equals_uint64 (uint, uint) -> bool",
    "_>=_ greater_equals_uint64_double (uint, double) -> bool",
    "_>=_ greater_equals_uint64_int64 (uint, int) -> bool",
    "_>=_ greater_equals_double (double, double) -> bool",
    "_>=_ greater_equals_double_int64 (double, int) -> bool",
    "_>=_ greater_equals_double_uint64 (double, uint) -> bool",
    "_>=_ greater_equals_string (string, string) -> bool",
    "_>=_ greater_equals_bytes (bytes, bytes) -> bool",
    "_>=_ greater_equals_timestamp (timestamp, timestamp) -> bool",
    "_>=_ greater_equals_duration (duration, duration) -> bool",
    "_>_ greater_bool (bool, bool) -> bool",
    "_>_ greater_int64 (int, int) -> bool",
    "_>_ greater_int64_double (int, double) -> bool",
    "_>_ greater_int64_uint64 (int, uint) -> bool",
    "_>_ greater_uint64 (uint, uint) -> bool",
    "_>_ greater_uint64_double (uint, double) -> bool",
    "_>_ greater_uint64_int64 (uint, int) -> bool",
    "_>_ greater_double (double, double) -> bool",
    "_>_ greater_double_int64 (double, int) -> bool",
    "_>_ greater_double_uint64 (double, uint) -> bool",
    "_>_ greater_string (string, string) -> bool",
    "_>_ greater_bytes (bytes, bytes) -> bool",
    "_>_ greater_timestamp (timestamp, timestamp) -> bool",
    "_>_ greater_duration (duration, duration) -> bool",
    "_?_:_ conditional <A> (bool, A, A) -> A",
    "_[?_] list_optindex_optional_int <V> (list(V), int) -> optional_type(V)",
    "_[?_] optional_list_optindex_optional_int <V> (optional_type(list(V)), int) -> optional_type(V)",
    "_[?_] map_optindex_optional_value <K V> (map(K, V), K) -> optional_type(V)",
    "_[?_] optional_map_optindex_optional_value <K V> (optional_type(map(K, V)), K) -> optional_type(V)",
    "_[_] index_list <A> (list(A), int) -> A",
    "_[_] index_map <A B> (map(A, B), A) -> B",
    "_[_] optional_list_index_int <V> (optional_type(list(V)), int) -> optional_type(V)",
    "_[_] optional_map_index_value <K V> (optional_type(map(K, V)), K) -> optional_type(V)",
    "_||_ logical_or (bool, bool) -> bool",
    "add quantity_add .(kubernetes.Quantity, kubernetes.Quantity) -> kubernetes.Quantity",
    "add quantity_add_int .(kubernetes.Quantity, int) -> kubernetes.Quantity",
    "allowed decision_allowed .(kubernetes.authorization.Decision) -> bool",
    "asApproximateFloat quantity_get_float .(kubernetes.Quantity) -> double",
    "asInteger quantity_get_int .(kubernetes.Quantity) -> int",
    "bool bool_to_bool (bool) -> bool",
    "bool string_to_bool (string) -> bool",
    "bytes bytes_to_bytes (bytes) -> bytes",
    "bytes string_to_bytes (string) -> bytes",
    "cel.@mapInsert @mapInsert_map_key_value <K V> (map(K, V), K, V) -> map(K, V)",
    "cel.@mapInsert @mapInsert_map_map <K V> (map(K, V), map(K, V)) -> map(K, V)",
    "charAt string_char_at_int .(string, int) -> string",
    "check pathcheck_check .(kubernetes.authorization.PathCheck, string) -> kubernetes.authorization.Decision",
    "check resourcecheck_check .(kubernetes.authorization.ResourceCheck, string) -> kubernetes.authorization.Decision",
    "cidr string_to_cidr (string) -> net.CIDR",
    "compareTo quantity_compare_to .(kubernetes.Quantity, kubernetes.Quantity) -> int",
    "compareTo semver_compare_to .(kubernetes.Semver, kubernetes.Semver) -> int",
    "contains contains_string .(string, string) -> bool",
    "containsCIDR cidr_contains_cidr_string .(net.CIDR, string) -> bool",
    "containsCIDR cidr_contains_cidr .(net.CIDR, net.CIDR) -> bool",
    "containsIP cidr_contains_ip_string .(net.CIDR, string) -> bool",
    "containsIP cidr_contains_ip_ip .(net.CIDR, net.IP) -> bool",
    "distinct list_distinct <T> .(list(T)) -> list(T)",
    "double double_to_double (double) -> double",
    "double int64_to_double (int) -> double",
    "double string_to_double (string) -> double",
    "double uint64_to_double (uint) -> double",
    "duration duration_to_duration (duration) -> duration",
    "duration string_to_duration (string) -> duration",
    "dyn to_dyn <A> (A) -> dyn",
    "endsWith ends_with_string .(string, string) -> bool",
    "error decision_error .(kubernetes.authorization.Decision) -> string",
    "errored decision_errored .(kubernetes.authorization.Decision) -> bool",
    "family ip_family .(net.IP) -> int",
    "fieldSelector authorizer_fieldselector .(kubernetes.authorization.ResourceCheck, string) -> kubernetes.authorization.ResourceCheck",
    "find string_find_string .(string, string) -> string",
    "findAll string_find_all_string .(string, string) -> list(string)",
    "findAll string_find_all_string_int .(string, string, int) -> list(string)",
    "first list_first <V> .(list(V)) -> optional_type(V)",
    "flatten list_flatten <T> .(list(list(T))) -> list(T)",
    "flatten list_flatten_int .(list(dyn), int) -> list(dyn)",
    "format.byte format.byte () -> kubernetes.NamedFormat",
    "format.date format.date () -> kubernetes.NamedFormat",
    "format.datetime format.datetime () -> kubernetes.NamedFormat",
    "format.dns1035Label format.dns1035Label () -> kubernetes.NamedFormat",
    "format.dns1035LabelPrefix format.dns1035LabelPrefix () -> kubernetes.NamedFormat",
    "format.dns1123Label format.dns1123Label () -> kubernetes.NamedFormat",
    "format.dns1123LabelPrefix format.dns1123LabelPrefix () -> kubernetes.NamedFormat",
    "format.dns1123Subdomain format.dns1123Subdomain () -> kubernetes.NamedFormat",
    "format.dns1123SubdomainPrefix format.dns1123SubdomainPrefix () -> kubernetes.NamedFormat",
    "format.labelValue format.labelValue () -> kubernetes.NamedFormat",
    "format.named format-named (string) -> optional_type(kubernetes.NamedFormat)",
    "format.qualifiedName format.qualifiedName () -> kubernetes.NamedFormat",
    "format.uri format.uri () -> kubernetes.NamedFormat",
    "format.uuid format.uuid () -> kubernetes.NamedFormat",
    "getDate timestamp_to_day_of_month_1_based .(timestamp) -> int",
    "getDate timestamp_to_day_of_month_1_based_with_tz .(timestamp, string) -> int",
    "getDayOfMonth timestamp_to_day_of_month .(timestamp) -> int",
    "getDayOfMonth timestamp_to_day_of_month_with_tz .(timestamp, string) -> int",
    "getDayOfWeek timestamp_to_day_of_week .(timestamp) -> int",
    "getDayOfWeek timestamp_to_day_of_week_with_tz .(timestamp, string) -> int",
    "getDayOfYear timestamp_to_day_of_year .(timestamp) -> int",
    "getDayOfYear timestamp_to_day_of_year_with_tz .(timestamp, string) -> int",
    "getEscapedPath url_get_escaped_path .(kubernetes.URL) -> string",
    "getFullYear timestamp_to_year .(timestamp) -> int",
    "getFullYear timestamp_to_year_with_tz .(timestamp, string) -> int",
    "getHost url_get_host .(kubernetes.URL) -> string",
    "getHostname url_get_hostname .(kubernetes.URL) -> string",
    "getHours timestamp_to_hours .(timestamp) -> int",
    "getHours timestamp_to_hours_with_tz .(timestamp, string) -> int",
    "getHours duration_to_hours .(duration) -> int",
    "getMilliseconds timestamp_to_milliseconds .(timestamp) -> int",
    "getMilliseconds timestamp_to_milliseconds_with_tz .(timestamp, string) -> int",
    "getMilliseconds duration_to_milliseconds .(duration) -> int",
    "getMinutes timestamp_to_minutes .(timestamp) -> int",
    "getMinutes timestamp_to_minutes_with_tz .(timestamp, string) -> int",
    "getMinutes duration_to_minutes .(duration) -> int",
    "getMonth timestamp_to_month .(timestamp) -> int",
    "getMonth timestamp_to_month_with_tz .(timestamp, string) -> int",
    "getPort url_get_port .(kubernetes.URL) -> string",
    "getQuery url_get_query .(kubernetes.URL) -> map(string, list(string))",
    "getScheme url_get_scheme .(kubernetes.URL) -> string",
    "getSeconds timestamp_to_seconds .(timestamp) -> int",
    "getSeconds timestamp_to_seconds_tz .(timestamp, string) -> int",
    "getSeconds duration_to_seconds .(duration) -> int",
    "group authorizer_group .(kubernetes.authorization.Authorizer, string) -> kubernetes.authorization.GroupCheck",
    "hasValue optional_hasValue <V> .(optional_type(V)) -> bool",
    "indexOf list_a_index_of_int <A> .(list(A), A) -> int",
    "indexOf string_index_of_string .(string, string) -> int",
    "indexOf string_index_of_string_int .(string, string, int) -> int",
    "int int64_to_int64 (int) -> int",
    "int double_to_int64 (double) -> int",
    "int duration_to_int64 (duration) -> int",
    "int string_to_int64 (string) -> int",
    "int timestamp_to_int64 (timestamp) -> int",
    "int uint64_to_int64 (uint) -> int",
    "ip string_to_ip (string) -> net.IP",
    "ip cidr_ip .(net.CIDR) -> net.IP",
    "ip.isCanonical ip_is_canonical (string) -> bool",
    "isCIDR is_cidr (string) -> bool",
    "isGlobalUnicast ip_is_global_unicast .(net.IP) -> bool",
    "isGreaterThan quantity_is_greater_than .(kubernetes.Quantity, kubernetes.Quantity) -> bool",
    "isGreaterThan semver_is_greater_than .(kubernetes.Semver, kubernetes.Semver) -> bool",
    "isIP is_ip (string) -> bool",
    "isInteger quantity_is_integer .(kubernetes.Quantity) -> bool",
    "isLessThan quantity_is_less_than .(kubernetes.Quantity, kubernetes.Quantity) -> bool",
    "isLessThan semver_is_less_than .(kubernetes.Semver, kubernetes.Semver) -> bool",
    "isLinkLocalMulticast ip_is_link_local_multicast .(net.IP) -> bool",
    "isLinkLocalUnicast ip_is_link_local_unicast .(net.IP) -> bool",
    "isLoopback ip_is_loopback .(net.IP) -> bool",
    "isQuantity is_quantity_string (string) -> bool",
    "isSemver is_semver_string (string) -> bool",
    "isSemver is_semver_string_bool (string, bool) -> bool",
    "isSorted list_int_is_sorted_bool .(list(int)) -> bool",
    "isSorted list_uint_is_sorted_bool .(list(uint)) -> bool",
    "isSorted list_double_is_sorted_bool .(list(double)) -> bool",
    "isSorted list_bool_is_sorted_bool .(list(bool)) -> bool",
    "isSorted list_duration_is_sorted_bool .(list(duration)) -> bool",
    "isSorted list_timestamp_is_sorted_bool .(list(timestamp)) -> bool",
    "isSorted list_string_is_sorted_bool .(list(string)) -> bool",
    "isSorted list_bytes_is_sorted_bool .(list(bytes)) -> bool",
    "isURL is_url_string (string) -> bool",
    "isUnspecified ip_is_unspecified .(net.IP) -> bool",
    "join list_join .(list(string)) -> string",
    "join list_join_string .(list(string), string) -> string",
    "labelSelector authorizer_labelselector .(kubernetes.authorization.ResourceCheck, string) -> kubernetes.authorization.ResourceCheck",
    "last list_last <V> .(list(V)) -> optional_type(V)",
    "lastIndexOf list_a_last_index_of_int <A> .(list(A), A) -> int",
    "lastIndexOf string_last_index_of_string .(string, string) -> int",
    "lastIndexOf string_last_index_of_string_int .(string, string, int) -> int",
    "lists.range lists_range (int) -> list(int)",
    "lowerAscii string_lower_ascii .(string) -> string",
    "major semver_major .(kubernetes.Semver) -> int",
    "masked cidr_masked .(net.CIDR) -> net.CIDR",
    "matches matches (string, string) -> bool",
    "matches matches_string .(string, string) -> bool",
    "max list_int_max_int .(list(int)) -> int",
    "max list_uint_max_uint .(list(uint)) -> uint",
    "max list_double_max_double .(list(double)) -> double",
    "max list_bool_max_bool .(list(bool)) -> bool",
    "max list_duration_max_duration .(list(duration)) -> duration",
    "max list_timestamp_max_timestamp .(list(timestamp)) -> timestamp",
    "max list_string_max_string .(list(string)) -> string",
    "max list_bytes_max_bytes .(list(bytes)) -> bytes",
    "min list_int_min_int .(list(int)) -> int",
    "min list_uint_min_uint .(list(uint)) -> uint",
    "min list_double_min_double .(list(double)) -> double",
    "min list_bool_min_bool .(list(bool)) -> bool",
    "min list_duration_min_duration .(list(duration)) -> duration",
    "min list_timestamp_min_timestamp .(list(timestamp)) -> timestamp",
    "min list_string_min_string .(list(string)) -> string",
    "min list_bytes_min_bytes .(list(bytes)) -> bytes",
    "minor semver_minor .(kubernetes.Semver) -> int",
    "name resourcecheck_name .(kubernetes.authorization.ResourceCheck, string) -> kubernetes.authorization.ResourceCheck",
    "namespace resourcecheck_namespace .(kubernetes.authorization.ResourceCheck, string) -> kubernetes.authorization.ResourceCheck",
    "optional.none optional_none <V> () -> optional_type(V)",
    "optional.of optional_of <V> (V) -> optional_type(V)",
    "optional.ofNonZeroValue optional_ofNonZeroValue <V> (V) -> optional_type(V)",
    "optional.unwrap optional_unwrap <V> (list(optional_type(V))) -> list(V)",
    "or optional_or_optional <V> .(optional_type(V), optional_type(V)) -> optional_type(V)",
    "orValue optional_orValue_value <V> .(optional_type(V), V) -> V",
    "patch semver_patch .(kubernetes.Semver) -> int",
    "path authorizer_path .(kubernetes.authorization.Authorizer, string) -> kubernetes.authorization.PathCheck",
    "prefixLength cidr_prefix_length .(net.CIDR) -> int",
    "quantity string_to_quantity (string) -> kubernetes.Quantity",
    "reason decision_reason .(kubernetes.authorization.Decision) -> string",
    "replace string_replace_string_string .(string, string, string) -> string",
    "replace string_replace_string_string_int .(string, string, string, int) -> string",
    "resource groupcheck_resource .(kubernetes.authorization.GroupCheck, string) -> kubernetes.authorization.ResourceCheck",
    "reverse list_reverse <T> .(list(T)) -> list(T)",
    "semver string_to_semver (string) -> kubernetes.Semver",
    "semver string_bool_to_semver (string, bool) -> kubernetes.Semver",
    "serviceAccount authorizer_serviceaccount .(kubernetes.authorization.Authorizer, string, string) -> kubernetes.authorization.Authorizer",
    "sets.contains list_sets_contains_list <T> (list(T), list(T)) -> bool",
    "sets.equivalent list_sets_equivalent_list <T> (list(T), list(T)) -> bool",
    "sets.intersects list_sets_intersects_list <T> (list(T), list(T)) -> bool",
    "sign quantity_sign (kubernetes.Quantity) -> int",
    "size size_bytes (bytes) -> int",
    "size bytes_size .(bytes) -> int",
    "size size_list <A> (list(A)) -> int",
    "size list_size <A> .(list(A)) -> int",
    "size size_map <A B> (map(A, B)) -> int",
    "size map_size <A B> .(map(A, B)) -> int",
    "size size_string (string) -> int",
    "size string_size .(string) -> int",
    "slice list_slice <T> .(list(T), int, int) -> list(T)",
    "sort list_int_sort .(list(int)) -> list(int)",
    "sort list_uint_sort .(list(uint)) -> list(uint)",
    "sort list_double_sort .(list(double)) -> list(double)",
    "sort list_bool_sort .(list(bool)) -> list(bool)",
    "sort list_google.protobuf.Duration_sort .(list(duration)) -> list(duration)",
    "sort list_google.protobuf.Timestamp_sort .(list(timestamp)) -> list(timestamp)",
    "sort list_string_sort .(list(string)) -> list(string)",
    "sort list_bytes_sort .(list(bytes)) -> list(bytes)",
    "split string_split_string .(string, string) -> list(string)",
    "split string_split_string_int .(string, string, int) -> list(string)",
    "startsWith starts_with_string .(string, string) -> bool",
    "string string_to_string (string) -> string",
    "string bool_to_string (bool) -> string",
    "string bytes_to_string (bytes) -> string",
    "string double_to_string (double) -> string",
    "string duration_to_string (duration) -> string",
    "string int64_to_string (int) -> string",
    "string timestamp_to_string (timestamp) -> string",
    "string uint64_to_string (uint) -> string",
    "string ip_to_string (net.IP) -> string",
    "string cidr_to_string (net.CIDR) -> string",
    "strings.quote strings_quote (string) -> string",
    "sub quantity_sub .(kubernetes.Quantity, kubernetes.Quantity) -> kubernetes.Quantity",
    "sub quantity_sub_int .(kubernetes.Quantity, int) -> kubernetes.Quantity",
    "subresource resourcecheck_subresource .(kubernetes.authorization.ResourceCheck, string) -> kubernetes.authorization.ResourceCheck",
    "substring string_substring_int .(string, int) -> string",
    "substring string_substring_int_int .(string, int, int) -> string",
    "sum list_int_sum_int .(list(int)) -> int",
    "sum list_uint_sum_uint .(list(uint)) -> uint",
    "sum list_double_sum_double .(list(double)) -> double",
    "sum list_duration_sum_duration .(list(duration)) -> duration",
    "timestamp timestamp_to_timestamp (timestamp) -> timestamp",
    "timestamp int64_to_timestamp (int) -> timestamp",
    "timestamp string_to_timestamp (string) -> timestamp",
    "trim string_trim .(string) -> string",
    "type type <A> (A) -> type(A)",
    "uint uint64_to_uint64 (uint) -> uint",
    "uint double_to_uint64 (double) -> uint",
    "uint int64_to_uint64 (int) -> uint",
    "uint string_to_uint64 (string) -> uint",
    "unwrapOpt optional_unwrapOpt <V> .(list(optional_type(V))) -> list(V)",
    "upperAscii string_upper_ascii .(string) -> string",
    "url string_to_url (string) -> kubernetes.URL",
    "validate format-validate .(kubernetes.NamedFormat, string) -> optional_type(list(string))",
    "value optional_value <V> .(optional_type(V)) -> V",
];

/// The functions declared with a mutation's types ([`super::Declarations::with_patch_types`]):
/// k8s.io/apiserver's jsonpatch library.
const PATCH_SIGNATURES: &[&str] = &["jsonpatch.escapeKey string_jsonpatch_escapeKey_string (string) -> string"];

/// The signatures the checker knows, in `tools/cel-oracle -declarations` form.
pub fn signatures() -> &'static [&'static str] {
    SIGNATURES
}

/// An overload of a function.
#[derive(Debug)]
pub(crate) struct Overload {
    /// Its id (`add_string`), by which cel-go's cost estimator prices a call.
    pub id: &'static str,
    /// Whether it is called on a target (`s.size()`), the first of `parameters`.
    pub member: bool,
    /// Its type parameters, instantiated in this order.
    pub type_parameters: Vec<Arc<str>>,
    /// Its parameters' types, the target's first.
    pub parameters: Vec<CelType>,
    /// The type it returns.
    pub result: CelType,
}

/// A declared function.
#[derive(Debug, Default)]
pub(crate) struct Function {
    pub overloads: Vec<Overload>,
}

static FUNCTIONS: LazyLock<HashMap<&'static str, Function>> = LazyLock::new(|| {
    let mut functions: HashMap<&'static str, Function> = HashMap::new();
    for (name, _, overload) in SIGNATURES.iter().filter_map(|line| parse(line)) {
        functions.entry(name).or_default().overloads.push(overload);
    }
    functions
});

static PATCH_FUNCTIONS: LazyLock<HashMap<&'static str, Function>> = LazyLock::new(|| {
    let mut functions: HashMap<&'static str, Function> = HashMap::new();
    for (name, _, overload) in PATCH_SIGNATURES.iter().filter_map(|line| parse(line)) {
        functions.entry(name).or_default().overloads.push(overload);
    }
    functions
});

/// The function the environment declares by `name` (`size`, `optional.of`, `_+_`); with
/// `patch_types`, a mutation's functions too (`jsonpatch.escapeKey`).
pub(crate) fn function(name: &str, patch_types: bool) -> Option<&'static Function> {
    FUNCTIONS.get(name).or_else(|| if patch_types { PATCH_FUNCTIONS.get(name) } else { None })
}

/// A line of [`SIGNATURES`]: the function's name, the overload's id and the overload.
fn parse(line: &'static str) -> Option<(&'static str, &'static str, Overload)> {
    let (name, rest) = line.split_once(' ')?;
    let (id, rest) = rest.split_once(' ')?;
    let (type_parameters, rest) = match rest.strip_prefix('<') {
        Some(rest) => {
            let (names, rest) = rest.split_once("> ")?;
            (names.split(' ').map(Arc::from).collect(), rest)
        }
        None => (Vec::new(), rest),
    };
    let (member, rest) = match rest.strip_prefix('.') {
        Some(rest) => (true, rest),
        None => (false, rest),
    };
    let (parameters, result) = rest.rsplit_once(" -> ")?;
    let parameters = parameters.strip_prefix('(')?.strip_suffix(')')?;
    let parameters = split(parameters).map(|p| parse_type(p, &type_parameters)).collect::<Option<Vec<_>>>()?;
    let result = parse_type(result, &type_parameters)?;
    Some((name, id, Overload { id, member, type_parameters, parameters, result }))
}

/// The type `text` writes (`map(K, list(string))`), its type parameters named in `parameters`.
fn parse_type(text: &str, parameters: &[Arc<str>]) -> Option<CelType> {
    let (name, arguments) = match text.split_once('(') {
        Some((name, rest)) => (name, split(rest.strip_suffix(')')?).collect::<Vec<_>>()),
        None => (text, Vec::new()),
    };
    let mut arguments = arguments.into_iter().map(|a| parse_type(a, parameters)).collect::<Option<Vec<_>>>()?;
    let t = match (name, arguments.len()) {
        ("dyn", 0) => CelType::Dyn,
        ("null", 0) => CelType::Null,
        ("bool", 0) => CelType::Bool,
        ("int", 0) => CelType::Int,
        ("uint", 0) => CelType::Uint,
        ("double", 0) => CelType::Double,
        ("string", 0) => CelType::String,
        ("bytes", 0) => CelType::Bytes,
        ("timestamp", 0) => CelType::Timestamp,
        ("duration", 0) => CelType::Duration,
        ("type", 0) => CelType::Type(None),
        ("list" | "type", 1) => {
            let of = arguments.pop()?;
            if name == "list" { CelType::list(of) } else { CelType::type_of(of) }
        }
        ("map", 2) => {
            let value = arguments.pop()?;
            CelType::map(arguments.pop()?, value)
        }
        (name, 0) if parameters.iter().any(|p| &**p == name) => CelType::Param(Arc::from(name)),
        // Kubernetes' libraries declare their types objects (but for `net.IP` and `net.CIDR`).
        (name, 0) if name.starts_with("kubernetes.") => library_object(name),
        (name, _) => CelType::Opaque(Arc::from(name), arguments),
    };
    Some(t)
}

/// The comma-separated parts of `text` outside parentheses.
fn split(text: &str) -> impl Iterator<Item = &str> {
    let mut depth = 0usize;
    let mut start = 0;
    let mut parts = Vec::new();
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if !text.trim().is_empty() {
        parts.push(text[start..].trim());
    }
    parts.into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_signature_parses_and_writes_back_as_it_reads() {
        for line in SIGNATURES.iter().chain(PATCH_SIGNATURES) {
            let Some((name, id, overload)) = parse(line) else { panic!("{line} does not parse") };
            let written: Vec<String> = overload.parameters.iter().map(|p| p.to_string()).collect();
            let parameters = match overload.type_parameters.is_empty() {
                true => String::new(),
                false => format!("<{}> ", overload.type_parameters.join(" ")),
            };
            let member = if overload.member { "." } else { "" };
            let again = format!("{name} {id} {parameters}{member}({}) -> {}", written.join(", "), overload.result);
            assert_eq!(&again, line);
        }
    }

    #[test]
    fn type_parameters_are_told_from_library_types() {
        let (_, _, overload) =
            parse("_[?_] map_optindex_optional_value <V K> (map(K, V), K) -> optional_type(V)").unwrap();
        let k = CelType::Param(Arc::from("K"));
        assert_eq!(overload.parameters, [CelType::map(k.clone(), CelType::Param(Arc::from("V"))), k]);
        assert_eq!(parse_type("kubernetes.Quantity", &[]), Some(library_object("kubernetes.Quantity")));
        assert_eq!(parse_type("net.IP", &[]), Some(CelType::opaque("net.IP")));
    }

    #[test]
    fn every_declared_function_is_one_the_planner_dispatches() {
        for (name, function) in FUNCTIONS.iter().chain(PATCH_FUNCTIONS.iter()) {
            for overload in &function.overloads {
                let arguments = overload.parameters.len() - usize::from(overload.member);
                let planned =
                    super::super::functions::is_declared(name, overload.member, arguments) || PLANNED.contains(name);
                assert!(planned, "{name} {:?}", overload.parameters);
            }
        }
    }

    /// The operators the planner turns into steps of its own.
    const PLANNED: &[&str] = &["_&&_", "_||_", "_?_:_", "_[_]", "_[?_]", "or", "orValue"];
}
