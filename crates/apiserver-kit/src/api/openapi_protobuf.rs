//! The OpenAPI v2 document as protobuf: gnostic's `openapi.v2.Document`
//! (`github.com/google/gnostic-models/openapiv2`), which the kube-apiserver serves at
//! `/openapi/v2` to a client asking for `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`
//! (or `…spec.v2.v1.0+protobuf`).
//!
//! kubectl asks for nothing else there: since 1.27 it validates against OpenAPI v3 and falls
//! back to the v2 document (in protobuf only) when v3 has no schema for an object's kind, so a
//! mistyped kind must find this document to get the RESTMapper's `no matches for kind`; older
//! kubectl reads it for all validation and `kubectl explain`.
//!
//! The messages are written by hand (prost derive, no protoc), with the tags of gnostic's
//! `OpenAPIv2.proto`, and filled from the JSON document as gnostic's `ParseDocument` fills them:
//! every field of the document, maps as ordered `Named*` pairs in the JSON's key order, vendor
//! extensions (`x-…`) and `default`/`example`/`enum` values as `Any { yaml }` holding the value
//! as YAML text, and each `oneof` chosen as gnostic chooses it (a `$ref` makes a parameter or
//! response a `JsonReference`, `in` picks the parameter's kind, `type: file` a `FileSchema`,
//! `type` and `flow` the security scheme). Keys gnostic would refuse are left out rather than
//! failing the whole document.

use prost::Message;
use serde_json::{Map, Value};

/// The media type of the document: the `Content-Type` of every protobuf answer, whichever
/// spelling was asked for, as the kube-apiserver answers (kube-openapi's `handler`).
pub const MEDIA_TYPE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
/// The spelling client-go (so kubectl) asks for. Its `@` is not allowed in a media type, so it is
/// never a `Content-Type`: client-go fails to parse it ("mime: unexpected content after media
/// subtype").
pub const CLIENT_GO_MEDIA_TYPE: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

pub use messages::*;

/// gnostic's messages (package `openapi.v2`), as prost structs: each field has the name and tag
/// of its `OpenAPIv2.proto` field (`r#ref` for `_ref`), and means what the OpenAPI v2 field of
/// that name means. A `oneof`'s variants hold their messages unboxed (boxed only where a message
/// contains itself), as prost-build generates them: the document is built once.
#[allow(missing_docs, clippy::large_enum_variant)]
pub mod messages {
    use prost::Message;

    /// `openapi.v2.Document`
    #[derive(Clone, PartialEq, Message)]
    pub struct Document {
        #[prost(string, tag = "1")]
        pub swagger: String,
        #[prost(message, optional, tag = "2")]
        pub info: Option<Info>,
        #[prost(string, tag = "3")]
        pub host: String,
        #[prost(string, tag = "4")]
        pub base_path: String,
        #[prost(string, repeated, tag = "5")]
        pub schemes: Vec<String>,
        #[prost(string, repeated, tag = "6")]
        pub consumes: Vec<String>,
        #[prost(string, repeated, tag = "7")]
        pub produces: Vec<String>,
        #[prost(message, optional, tag = "8")]
        pub paths: Option<Paths>,
        #[prost(message, optional, tag = "9")]
        pub definitions: Option<Definitions>,
        #[prost(message, optional, tag = "10")]
        pub parameters: Option<ParameterDefinitions>,
        #[prost(message, optional, tag = "11")]
        pub responses: Option<ResponseDefinitions>,
        #[prost(message, repeated, tag = "12")]
        pub security: Vec<SecurityRequirement>,
        #[prost(message, optional, tag = "13")]
        pub security_definitions: Option<SecurityDefinitions>,
        #[prost(message, repeated, tag = "14")]
        pub tags: Vec<Tag>,
        #[prost(message, optional, tag = "15")]
        pub external_docs: Option<ExternalDocs>,
        #[prost(message, repeated, tag = "16")]
        pub vendor_extension: Vec<NamedAny>,
    }

    /// `openapi.v2.Any`: a value as YAML text (`value`, a `google.protobuf.Any`, is never set).
    #[derive(Clone, PartialEq, Message)]
    pub struct Any {
        #[prost(string, tag = "2")]
        pub yaml: String,
    }

    /// `openapi.v2.NamedAny`
    #[derive(Clone, PartialEq, Message)]
    pub struct NamedAny {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<Any>,
    }

    /// `openapi.v2.Info`
    #[derive(Clone, PartialEq, Message)]
    pub struct Info {
        #[prost(string, tag = "1")]
        pub title: String,
        #[prost(string, tag = "2")]
        pub version: String,
        #[prost(string, tag = "3")]
        pub description: String,
        #[prost(string, tag = "4")]
        pub terms_of_service: String,
        #[prost(message, optional, tag = "5")]
        pub contact: Option<Contact>,
        #[prost(message, optional, tag = "6")]
        pub license: Option<License>,
        #[prost(message, repeated, tag = "7")]
        pub vendor_extension: Vec<NamedAny>,
    }

    /// `openapi.v2.Contact`
    #[derive(Clone, PartialEq, Message)]
    pub struct Contact {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub url: String,
        #[prost(string, tag = "3")]
        pub email: String,
        #[prost(message, repeated, tag = "4")]
        pub vendor_extension: Vec<NamedAny>,
    }

    /// `openapi.v2.License`
    #[derive(Clone, PartialEq, Message)]
    pub struct License {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub url: String,
        #[prost(message, repeated, tag = "3")]
        pub vendor_extension: Vec<NamedAny>,
    }

    /// `openapi.v2.ExternalDocs`
    #[derive(Clone, PartialEq, Message)]
    pub struct ExternalDocs {
        #[prost(string, tag = "1")]
        pub description: String,
        #[prost(string, tag = "2")]
        pub url: String,
        #[prost(message, repeated, tag = "3")]
        pub vendor_extension: Vec<NamedAny>,
    }

    /// `openapi.v2.Tag`
    #[derive(Clone, PartialEq, Message)]
    pub struct Tag {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub description: String,
        #[prost(message, optional, tag = "3")]
        pub external_docs: Option<ExternalDocs>,
        #[prost(message, repeated, tag = "4")]
        pub vendor_extension: Vec<NamedAny>,
    }

    /// `openapi.v2.Paths`
    #[derive(Clone, PartialEq, Message)]
    pub struct Paths {
        #[prost(message, repeated, tag = "1")]
        pub vendor_extension: Vec<NamedAny>,
        #[prost(message, repeated, tag = "2")]
        pub path: Vec<NamedPathItem>,
    }

    /// `openapi.v2.NamedPathItem`
    #[derive(Clone, PartialEq, Message)]
    pub struct NamedPathItem {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<PathItem>,
    }

    /// `openapi.v2.PathItem`
    #[derive(Clone, PartialEq, Message)]
    pub struct PathItem {
        #[prost(string, tag = "1")]
        pub r#ref: String,
        #[prost(message, optional, tag = "2")]
        pub get: Option<Operation>,
        #[prost(message, optional, tag = "3")]
        pub put: Option<Operation>,
        #[prost(message, optional, tag = "4")]
        pub post: Option<Operation>,
        #[prost(message, optional, tag = "5")]
        pub delete: Option<Operation>,
        #[prost(message, optional, tag = "6")]
        pub options: Option<Operation>,
        #[prost(message, optional, tag = "7")]
        pub head: Option<Operation>,
        #[prost(message, optional, tag = "8")]
        pub patch: Option<Operation>,
        #[prost(message, repeated, tag = "9")]
        pub parameters: Vec<ParametersItem>,
        #[prost(message, repeated, tag = "10")]
        pub vendor_extension: Vec<NamedAny>,
    }

    /// `openapi.v2.Operation`
    #[derive(Clone, PartialEq, Message)]
    pub struct Operation {
        #[prost(string, repeated, tag = "1")]
        pub tags: Vec<String>,
        #[prost(string, tag = "2")]
        pub summary: String,
        #[prost(string, tag = "3")]
        pub description: String,
        #[prost(message, optional, tag = "4")]
        pub external_docs: Option<ExternalDocs>,
        #[prost(string, tag = "5")]
        pub operation_id: String,
        #[prost(string, repeated, tag = "6")]
        pub produces: Vec<String>,
        #[prost(string, repeated, tag = "7")]
        pub consumes: Vec<String>,
        #[prost(message, repeated, tag = "8")]
        pub parameters: Vec<ParametersItem>,
        #[prost(message, optional, tag = "9")]
        pub responses: Option<Responses>,
        #[prost(string, repeated, tag = "10")]
        pub schemes: Vec<String>,
        #[prost(bool, tag = "11")]
        pub deprecated: bool,
        #[prost(message, repeated, tag = "12")]
        pub security: Vec<SecurityRequirement>,
        #[prost(message, repeated, tag = "13")]
        pub vendor_extension: Vec<NamedAny>,
    }

    /// `openapi.v2.JsonReference`
    #[derive(Clone, PartialEq, Message)]
    pub struct JsonReference {
        #[prost(string, tag = "1")]
        pub r#ref: String,
        #[prost(string, tag = "2")]
        pub description: String,
    }

    /// `openapi.v2.ParametersItem`: a parameter or a reference to one.
    #[derive(Clone, PartialEq, Message)]
    pub struct ParametersItem {
        #[prost(oneof = "parameters_item::Oneof", tags = "1, 2")]
        pub oneof: Option<parameters_item::Oneof>,
    }

    /// The `oneof` of [`ParametersItem`].
    pub mod parameters_item {
        /// `ParametersItem.oneof`
        #[derive(Clone, PartialEq, prost::Oneof)]
        pub enum Oneof {
            #[prost(message, tag = "1")]
            Parameter(super::Parameter),
            #[prost(message, tag = "2")]
            JsonReference(super::JsonReference),
        }
    }

    /// `openapi.v2.Parameter`: a body parameter or any other.
    #[derive(Clone, PartialEq, Message)]
    pub struct Parameter {
        #[prost(oneof = "parameter::Oneof", tags = "1, 2")]
        pub oneof: Option<parameter::Oneof>,
    }

    /// The `oneof` of [`Parameter`].
    pub mod parameter {
        /// `Parameter.oneof`
        #[derive(Clone, PartialEq, prost::Oneof)]
        pub enum Oneof {
            #[prost(message, tag = "1")]
            BodyParameter(super::BodyParameter),
            #[prost(message, tag = "2")]
            NonBodyParameter(super::NonBodyParameter),
        }
    }

    /// `openapi.v2.BodyParameter`
    #[derive(Clone, PartialEq, Message)]
    pub struct BodyParameter {
        #[prost(string, tag = "1")]
        pub description: String,
        #[prost(string, tag = "2")]
        pub name: String,
        #[prost(string, tag = "3")]
        pub r#in: String,
        #[prost(bool, tag = "4")]
        pub required: bool,
        #[prost(message, optional, tag = "5")]
        pub schema: Option<Schema>,
        #[prost(message, repeated, tag = "6")]
        pub vendor_extension: Vec<NamedAny>,
    }

    /// `openapi.v2.NonBodyParameter`: a header, form, query or path parameter.
    #[derive(Clone, PartialEq, Message)]
    pub struct NonBodyParameter {
        #[prost(oneof = "non_body_parameter::Oneof", tags = "1, 2, 3, 4")]
        pub oneof: Option<non_body_parameter::Oneof>,
    }

    /// The `oneof` of [`NonBodyParameter`].
    pub mod non_body_parameter {
        /// `NonBodyParameter.oneof`
        #[derive(Clone, PartialEq, prost::Oneof)]
        pub enum Oneof {
            #[prost(message, tag = "1")]
            HeaderParameterSubSchema(super::HeaderParameterSubSchema),
            #[prost(message, tag = "2")]
            FormDataParameterSubSchema(super::FormDataParameterSubSchema),
            #[prost(message, tag = "3")]
            QueryParameterSubSchema(super::QueryParameterSubSchema),
            #[prost(message, tag = "4")]
            PathParameterSubSchema(super::PathParameterSubSchema),
        }
    }

    /// `openapi.v2.HeaderParameterSubSchema`
    #[derive(Clone, PartialEq, Message)]
    pub struct HeaderParameterSubSchema {
        #[prost(bool, tag = "1")]
        pub required: bool,
        #[prost(string, tag = "2")]
        pub r#in: String,
        #[prost(string, tag = "3")]
        pub description: String,
        #[prost(string, tag = "4")]
        pub name: String,
        #[prost(string, tag = "5")]
        pub r#type: String,
        #[prost(string, tag = "6")]
        pub format: String,
        #[prost(message, optional, boxed, tag = "7")]
        pub items: Option<Box<PrimitivesItems>>,
        #[prost(string, tag = "8")]
        pub collection_format: String,
        #[prost(message, optional, tag = "9")]
        pub default: Option<Any>,
        #[prost(double, tag = "10")]
        pub maximum: f64,
        #[prost(bool, tag = "11")]
        pub exclusive_maximum: bool,
        #[prost(double, tag = "12")]
        pub minimum: f64,
        #[prost(bool, tag = "13")]
        pub exclusive_minimum: bool,
        #[prost(int64, tag = "14")]
        pub max_length: i64,
        #[prost(int64, tag = "15")]
        pub min_length: i64,
        #[prost(string, tag = "16")]
        pub pattern: String,
        #[prost(int64, tag = "17")]
        pub max_items: i64,
        #[prost(int64, tag = "18")]
        pub min_items: i64,
        #[prost(bool, tag = "19")]
        pub unique_items: bool,
        #[prost(message, repeated, tag = "20")]
        pub r#enum: Vec<Any>,
        #[prost(double, tag = "21")]
        pub multiple_of: f64,
        #[prost(message, repeated, tag = "22")]
        pub vendor_extension: Vec<NamedAny>,
    }

    /// `openapi.v2.FormDataParameterSubSchema`
    #[derive(Clone, PartialEq, Message)]
    pub struct FormDataParameterSubSchema {
        #[prost(bool, tag = "1")]
        pub required: bool,
        #[prost(string, tag = "2")]
        pub r#in: String,
        #[prost(string, tag = "3")]
        pub description: String,
        #[prost(string, tag = "4")]
        pub name: String,
        #[prost(bool, tag = "5")]
        pub allow_empty_value: bool,
        #[prost(string, tag = "6")]
        pub r#type: String,
        #[prost(string, tag = "7")]
        pub format: String,
        #[prost(message, optional, boxed, tag = "8")]
        pub items: Option<Box<PrimitivesItems>>,
        #[prost(string, tag = "9")]
        pub collection_format: String,
        #[prost(message, optional, tag = "10")]
        pub default: Option<Any>,
        #[prost(double, tag = "11")]
        pub maximum: f64,
        #[prost(bool, tag = "12")]
        pub exclusive_maximum: bool,
        #[prost(double, tag = "13")]
        pub minimum: f64,
        #[prost(bool, tag = "14")]
        pub exclusive_minimum: bool,
        #[prost(int64, tag = "15")]
        pub max_length: i64,
        #[prost(int64, tag = "16")]
        pub min_length: i64,
        #[prost(string, tag = "17")]
        pub pattern: String,
        #[prost(int64, tag = "18")]
        pub max_items: i64,
        #[prost(int64, tag = "19")]
        pub min_items: i64,
        #[prost(bool, tag = "20")]
        pub unique_items: bool,
        #[prost(message, repeated, tag = "21")]
        pub r#enum: Vec<Any>,
        #[prost(double, tag = "22")]
        pub multiple_of: f64,
        #[prost(message, repeated, tag = "23")]
        pub vendor_extension: Vec<NamedAny>,
    }

    /// `openapi.v2.QueryParameterSubSchema`
    #[derive(Clone, PartialEq, Message)]
    pub struct QueryParameterSubSchema {
        #[prost(bool, tag = "1")]
        pub required: bool,
        #[prost(string, tag = "2")]
        pub r#in: String,
        #[prost(string, tag = "3")]
        pub description: String,
        #[prost(string, tag = "4")]
        pub name: String,
        #[prost(bool, tag = "5")]
        pub allow_empty_value: bool,
        #[prost(string, tag = "6")]
        pub r#type: String,
        #[prost(string, tag = "7")]
        pub format: String,
        #[prost(message, optional, boxed, tag = "8")]
        pub items: Option<Box<PrimitivesItems>>,
        #[prost(string, tag = "9")]
        pub collection_format: String,
        #[prost(message, optional, tag = "10")]
        pub default: Option<Any>,
        #[prost(double, tag = "11")]
        pub maximum: f64,
        #[prost(bool, tag = "12")]
        pub exclusive_maximum: bool,
        #[prost(double, tag = "13")]
        pub minimum: f64,
        #[prost(bool, tag = "14")]
        pub exclusive_minimum: bool,
        #[prost(int64, tag = "15")]
        pub max_length: i64,
        #[prost(int64, tag = "16")]
        pub min_length: i64,
        #[prost(string, tag = "17")]
        pub pattern: String,
        #[prost(int64, tag = "18")]
        pub max_items: i64,
        #[prost(int64, tag = "19")]
        pub min_items: i64,
        #[prost(bool, tag = "20")]
        pub unique_items: bool,
        #[prost(message, repeated, tag = "21")]
        pub r#enum: Vec<Any>,
        #[prost(double, tag = "22")]
        pub multiple_of: f64,
        #[prost(message, repeated, tag = "23")]
        pub vendor_extension: Vec<NamedAny>,
    }

    /// `openapi.v2.PathParameterSubSchema`
    #[derive(Clone, PartialEq, Message)]
    pub struct PathParameterSubSchema {
        #[prost(bool, tag = "1")]
        pub required: bool,
        #[prost(string, tag = "2")]
        pub r#in: String,
        #[prost(string, tag = "3")]
        pub description: String,
        #[prost(string, tag = "4")]
        pub name: String,
        #[prost(string, tag = "5")]
        pub r#type: String,
        #[prost(string, tag = "6")]
        pub format: String,
        #[prost(message, optional, boxed, tag = "7")]
        pub items: Option<Box<PrimitivesItems>>,
        #[prost(string, tag = "8")]
        pub collection_format: String,
        #[prost(message, optional, tag = "9")]
        pub default: Option<Any>,
        #[prost(double, tag = "10")]
        pub maximum: f64,
        #[prost(bool, tag = "11")]
        pub exclusive_maximum: bool,
        #[prost(double, tag = "12")]
        pub minimum: f64,
        #[prost(bool, tag = "13")]
        pub exclusive_minimum: bool,
        #[prost(int64, tag = "14")]
        pub max_length: i64,
        #[prost(int64, tag = "15")]
        pub min_length: i64,
        #[prost(string, tag = "16")]
        pub pattern: String,
        #[prost(int64, tag = "17")]
        pub max_items: i64,
        #[prost(int64, tag = "18")]
        pub min_items: i64,
        #[prost(bool, tag = "19")]
        pub unique_items: bool,
        #[prost(message, repeated, tag = "20")]
        pub r#enum: Vec<Any>,
        #[prost(double, tag = "21")]
        pub multiple_of: f64,
        #[prost(message, repeated, tag = "22")]
        pub vendor_extension: Vec<NamedAny>,
    }

    /// `openapi.v2.PrimitivesItems`: the items of a non-body parameter or header of type array.
    #[derive(Clone, PartialEq, Message)]
    pub struct PrimitivesItems {
        #[prost(string, tag = "1")]
        pub r#type: String,
        #[prost(string, tag = "2")]
        pub format: String,
        #[prost(message, optional, boxed, tag = "3")]
        pub items: Option<Box<PrimitivesItems>>,
        #[prost(string, tag = "4")]
        pub collection_format: String,
        #[prost(message, optional, tag = "5")]
        pub default: Option<Any>,
        #[prost(double, tag = "6")]
        pub maximum: f64,
        #[prost(bool, tag = "7")]
        pub exclusive_maximum: bool,
        #[prost(double, tag = "8")]
        pub minimum: f64,
        #[prost(bool, tag = "9")]
        pub exclusive_minimum: bool,
        #[prost(int64, tag = "10")]
        pub max_length: i64,
        #[prost(int64, tag = "11")]
        pub min_length: i64,
        #[prost(string, tag = "12")]
        pub pattern: String,
        #[prost(int64, tag = "13")]
        pub max_items: i64,
        #[prost(int64, tag = "14")]
        pub min_items: i64,
        #[prost(bool, tag = "15")]
        pub unique_items: bool,
        #[prost(message, repeated, tag = "16")]
        pub r#enum: Vec<Any>,
        #[prost(double, tag = "17")]
        pub multiple_of: f64,
        #[prost(message, repeated, tag = "18")]
        pub vendor_extension: Vec<NamedAny>,
    }

    /// `openapi.v2.Responses`
    #[derive(Clone, PartialEq, Message)]
    pub struct Responses {
        #[prost(message, repeated, tag = "1")]
        pub response_code: Vec<NamedResponseValue>,
        #[prost(message, repeated, tag = "2")]
        pub vendor_extension: Vec<NamedAny>,
    }

    /// `openapi.v2.NamedResponseValue`
    #[derive(Clone, PartialEq, Message)]
    pub struct NamedResponseValue {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<ResponseValue>,
    }

    /// `openapi.v2.ResponseValue`: a response or a reference to one.
    #[derive(Clone, PartialEq, Message)]
    pub struct ResponseValue {
        #[prost(oneof = "response_value::Oneof", tags = "1, 2")]
        pub oneof: Option<response_value::Oneof>,
    }

    /// The `oneof` of [`ResponseValue`].
    pub mod response_value {
        /// `ResponseValue.oneof`
        #[derive(Clone, PartialEq, prost::Oneof)]
        pub enum Oneof {
            #[prost(message, tag = "1")]
            Response(super::Response),
            #[prost(message, tag = "2")]
            JsonReference(super::JsonReference),
        }
    }

    /// `openapi.v2.Response`
    #[derive(Clone, PartialEq, Message)]
    pub struct Response {
        #[prost(string, tag = "1")]
        pub description: String,
        #[prost(message, optional, tag = "2")]
        pub schema: Option<SchemaItem>,
        #[prost(message, optional, tag = "3")]
        pub headers: Option<Headers>,
        #[prost(message, optional, tag = "4")]
        pub examples: Option<Examples>,
        #[prost(message, repeated, tag = "5")]
        pub vendor_extension: Vec<NamedAny>,
    }

    /// `openapi.v2.SchemaItem`: a schema or a file.
    #[derive(Clone, PartialEq, Message)]
    pub struct SchemaItem {
        #[prost(oneof = "schema_item::Oneof", tags = "1, 2")]
        pub oneof: Option<schema_item::Oneof>,
    }

    /// The `oneof` of [`SchemaItem`].
    pub mod schema_item {
        /// `SchemaItem.oneof`
        #[derive(Clone, PartialEq, prost::Oneof)]
        pub enum Oneof {
            #[prost(message, tag = "1")]
            Schema(super::Schema),
            #[prost(message, tag = "2")]
            FileSchema(super::FileSchema),
        }
    }

    /// `openapi.v2.FileSchema`
    #[derive(Clone, PartialEq, Message)]
    pub struct FileSchema {
        #[prost(string, tag = "1")]
        pub format: String,
        #[prost(string, tag = "2")]
        pub title: String,
        #[prost(string, tag = "3")]
        pub description: String,
        #[prost(message, optional, tag = "4")]
        pub default: Option<Any>,
        #[prost(string, repeated, tag = "5")]
        pub required: Vec<String>,
        #[prost(string, tag = "6")]
        pub r#type: String,
        #[prost(bool, tag = "7")]
        pub read_only: bool,
        #[prost(message, optional, tag = "8")]
        pub external_docs: Option<ExternalDocs>,
        #[prost(message, optional, tag = "9")]
        pub example: Option<Any>,
        #[prost(message, repeated, tag = "10")]
        pub vendor_extension: Vec<NamedAny>,
    }

    /// `openapi.v2.Headers`
    #[derive(Clone, PartialEq, Message)]
    pub struct Headers {
        #[prost(message, repeated, tag = "1")]
        pub additional_properties: Vec<NamedHeader>,
    }

    /// `openapi.v2.NamedHeader`
    #[derive(Clone, PartialEq, Message)]
    pub struct NamedHeader {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<Header>,
    }

    /// `openapi.v2.Header`
    #[derive(Clone, PartialEq, Message)]
    pub struct Header {
        #[prost(string, tag = "1")]
        pub r#type: String,
        #[prost(string, tag = "2")]
        pub format: String,
        #[prost(message, optional, boxed, tag = "3")]
        pub items: Option<Box<PrimitivesItems>>,
        #[prost(string, tag = "4")]
        pub collection_format: String,
        #[prost(message, optional, tag = "5")]
        pub default: Option<Any>,
        #[prost(double, tag = "6")]
        pub maximum: f64,
        #[prost(bool, tag = "7")]
        pub exclusive_maximum: bool,
        #[prost(double, tag = "8")]
        pub minimum: f64,
        #[prost(bool, tag = "9")]
        pub exclusive_minimum: bool,
        #[prost(int64, tag = "10")]
        pub max_length: i64,
        #[prost(int64, tag = "11")]
        pub min_length: i64,
        #[prost(string, tag = "12")]
        pub pattern: String,
        #[prost(int64, tag = "13")]
        pub max_items: i64,
        #[prost(int64, tag = "14")]
        pub min_items: i64,
        #[prost(bool, tag = "15")]
        pub unique_items: bool,
        #[prost(message, repeated, tag = "16")]
        pub r#enum: Vec<Any>,
        #[prost(double, tag = "17")]
        pub multiple_of: f64,
        #[prost(string, tag = "18")]
        pub description: String,
        #[prost(message, repeated, tag = "19")]
        pub vendor_extension: Vec<NamedAny>,
    }

    /// `openapi.v2.Examples`
    #[derive(Clone, PartialEq, Message)]
    pub struct Examples {
        #[prost(message, repeated, tag = "1")]
        pub additional_properties: Vec<NamedAny>,
    }

    /// `openapi.v2.Definitions`
    #[derive(Clone, PartialEq, Message)]
    pub struct Definitions {
        #[prost(message, repeated, tag = "1")]
        pub additional_properties: Vec<NamedSchema>,
    }

    /// `openapi.v2.NamedSchema`
    #[derive(Clone, PartialEq, Message)]
    pub struct NamedSchema {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<Schema>,
    }

    /// `openapi.v2.Schema`
    #[derive(Clone, PartialEq, Message)]
    pub struct Schema {
        #[prost(string, tag = "1")]
        pub r#ref: String,
        #[prost(string, tag = "2")]
        pub format: String,
        #[prost(string, tag = "3")]
        pub title: String,
        #[prost(string, tag = "4")]
        pub description: String,
        #[prost(message, optional, tag = "5")]
        pub default: Option<Any>,
        #[prost(double, tag = "6")]
        pub multiple_of: f64,
        #[prost(double, tag = "7")]
        pub maximum: f64,
        #[prost(bool, tag = "8")]
        pub exclusive_maximum: bool,
        #[prost(double, tag = "9")]
        pub minimum: f64,
        #[prost(bool, tag = "10")]
        pub exclusive_minimum: bool,
        #[prost(int64, tag = "11")]
        pub max_length: i64,
        #[prost(int64, tag = "12")]
        pub min_length: i64,
        #[prost(string, tag = "13")]
        pub pattern: String,
        #[prost(int64, tag = "14")]
        pub max_items: i64,
        #[prost(int64, tag = "15")]
        pub min_items: i64,
        #[prost(bool, tag = "16")]
        pub unique_items: bool,
        #[prost(int64, tag = "17")]
        pub max_properties: i64,
        #[prost(int64, tag = "18")]
        pub min_properties: i64,
        #[prost(string, repeated, tag = "19")]
        pub required: Vec<String>,
        #[prost(message, repeated, tag = "20")]
        pub r#enum: Vec<Any>,
        #[prost(message, optional, boxed, tag = "21")]
        pub additional_properties: Option<Box<AdditionalPropertiesItem>>,
        #[prost(message, optional, tag = "22")]
        pub r#type: Option<TypeItem>,
        #[prost(message, optional, tag = "23")]
        pub items: Option<ItemsItem>,
        #[prost(message, repeated, tag = "24")]
        pub all_of: Vec<Schema>,
        #[prost(message, optional, tag = "25")]
        pub properties: Option<Properties>,
        #[prost(string, tag = "26")]
        pub discriminator: String,
        #[prost(bool, tag = "27")]
        pub read_only: bool,
        #[prost(message, optional, tag = "28")]
        pub xml: Option<Xml>,
        #[prost(message, optional, tag = "29")]
        pub external_docs: Option<ExternalDocs>,
        #[prost(message, optional, tag = "30")]
        pub example: Option<Any>,
        #[prost(message, repeated, tag = "31")]
        pub vendor_extension: Vec<NamedAny>,
    }

    /// `openapi.v2.AdditionalPropertiesItem`: a schema, or whether any property is allowed.
    #[derive(Clone, PartialEq, Message)]
    pub struct AdditionalPropertiesItem {
        #[prost(oneof = "additional_properties_item::Oneof", tags = "1, 2")]
        pub oneof: Option<additional_properties_item::Oneof>,
    }

    /// The `oneof` of [`AdditionalPropertiesItem`].
    pub mod additional_properties_item {
        /// `AdditionalPropertiesItem.oneof`
        #[derive(Clone, PartialEq, prost::Oneof)]
        pub enum Oneof {
            #[prost(message, tag = "1")]
            Schema(super::Schema),
            #[prost(bool, tag = "2")]
            Boolean(bool),
        }
    }

    /// `openapi.v2.TypeItem`
    #[derive(Clone, PartialEq, Message)]
    pub struct TypeItem {
        #[prost(string, repeated, tag = "1")]
        pub value: Vec<String>,
    }

    /// `openapi.v2.ItemsItem`
    #[derive(Clone, PartialEq, Message)]
    pub struct ItemsItem {
        #[prost(message, repeated, tag = "1")]
        pub schema: Vec<Schema>,
    }

    /// `openapi.v2.Properties`
    #[derive(Clone, PartialEq, Message)]
    pub struct Properties {
        #[prost(message, repeated, tag = "1")]
        pub additional_properties: Vec<NamedSchema>,
    }

    /// `openapi.v2.Xml`
    #[derive(Clone, PartialEq, Message)]
    pub struct Xml {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub namespace: String,
        #[prost(string, tag = "3")]
        pub prefix: String,
        #[prost(bool, tag = "4")]
        pub attribute: bool,
        #[prost(bool, tag = "5")]
        pub wrapped: bool,
        #[prost(message, repeated, tag = "6")]
        pub vendor_extension: Vec<NamedAny>,
    }

    /// `openapi.v2.ParameterDefinitions`
    #[derive(Clone, PartialEq, Message)]
    pub struct ParameterDefinitions {
        #[prost(message, repeated, tag = "1")]
        pub additional_properties: Vec<NamedParameter>,
    }

    /// `openapi.v2.NamedParameter`
    #[derive(Clone, PartialEq, Message)]
    pub struct NamedParameter {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<Parameter>,
    }

    /// `openapi.v2.ResponseDefinitions`
    #[derive(Clone, PartialEq, Message)]
    pub struct ResponseDefinitions {
        #[prost(message, repeated, tag = "1")]
        pub additional_properties: Vec<NamedResponse>,
    }

    /// `openapi.v2.NamedResponse`
    #[derive(Clone, PartialEq, Message)]
    pub struct NamedResponse {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<Response>,
    }

    /// `openapi.v2.SecurityDefinitions`
    #[derive(Clone, PartialEq, Message)]
    pub struct SecurityDefinitions {
        #[prost(message, repeated, tag = "1")]
        pub additional_properties: Vec<NamedSecurityDefinitionsItem>,
    }

    /// `openapi.v2.NamedSecurityDefinitionsItem`
    #[derive(Clone, PartialEq, Message)]
    pub struct NamedSecurityDefinitionsItem {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<SecurityDefinitionsItem>,
    }

    /// `openapi.v2.SecurityDefinitionsItem`: one security scheme.
    #[derive(Clone, PartialEq, Message)]
    pub struct SecurityDefinitionsItem {
        #[prost(oneof = "security_definitions_item::Oneof", tags = "1, 2, 3, 4, 5, 6")]
        pub oneof: Option<security_definitions_item::Oneof>,
    }

    /// The `oneof` of [`SecurityDefinitionsItem`].
    pub mod security_definitions_item {
        /// `SecurityDefinitionsItem.oneof`
        #[derive(Clone, PartialEq, prost::Oneof)]
        pub enum Oneof {
            #[prost(message, tag = "1")]
            BasicAuthenticationSecurity(super::BasicAuthenticationSecurity),
            #[prost(message, tag = "2")]
            ApiKeySecurity(super::ApiKeySecurity),
            #[prost(message, tag = "3")]
            Oauth2ImplicitSecurity(super::Oauth2Security),
            #[prost(message, tag = "4")]
            Oauth2PasswordSecurity(super::Oauth2Security),
            #[prost(message, tag = "5")]
            Oauth2ApplicationSecurity(super::Oauth2Security),
            #[prost(message, tag = "6")]
            Oauth2AccessCodeSecurity(super::Oauth2AccessCodeSecurity),
        }
    }

    /// `openapi.v2.BasicAuthenticationSecurity`
    #[derive(Clone, PartialEq, Message)]
    pub struct BasicAuthenticationSecurity {
        #[prost(string, tag = "1")]
        pub r#type: String,
        #[prost(string, tag = "2")]
        pub description: String,
        #[prost(message, repeated, tag = "3")]
        pub vendor_extension: Vec<NamedAny>,
    }

    /// `openapi.v2.ApiKeySecurity`
    #[derive(Clone, PartialEq, Message)]
    pub struct ApiKeySecurity {
        #[prost(string, tag = "1")]
        pub r#type: String,
        #[prost(string, tag = "2")]
        pub name: String,
        #[prost(string, tag = "3")]
        pub r#in: String,
        #[prost(string, tag = "4")]
        pub description: String,
        #[prost(message, repeated, tag = "5")]
        pub vendor_extension: Vec<NamedAny>,
    }

    /// `openapi.v2.Oauth2ImplicitSecurity`, `Oauth2PasswordSecurity` and
    /// `Oauth2ApplicationSecurity`: one message, as the three share their fields' tags (the
    /// implicit flow's `authorization_url` is tag 4, where the other two carry `token_url`).
    #[derive(Clone, PartialEq, Message)]
    pub struct Oauth2Security {
        #[prost(string, tag = "1")]
        pub r#type: String,
        #[prost(string, tag = "2")]
        pub flow: String,
        #[prost(message, optional, tag = "3")]
        pub scopes: Option<Oauth2Scopes>,
        /// `authorization_url` of the implicit flow, `token_url` of the password and application flows.
        #[prost(string, tag = "4")]
        pub url: String,
        #[prost(string, tag = "5")]
        pub description: String,
        #[prost(message, repeated, tag = "6")]
        pub vendor_extension: Vec<NamedAny>,
    }

    /// `openapi.v2.Oauth2AccessCodeSecurity`
    #[derive(Clone, PartialEq, Message)]
    pub struct Oauth2AccessCodeSecurity {
        #[prost(string, tag = "1")]
        pub r#type: String,
        #[prost(string, tag = "2")]
        pub flow: String,
        #[prost(message, optional, tag = "3")]
        pub scopes: Option<Oauth2Scopes>,
        #[prost(string, tag = "4")]
        pub authorization_url: String,
        #[prost(string, tag = "5")]
        pub token_url: String,
        #[prost(string, tag = "6")]
        pub description: String,
        #[prost(message, repeated, tag = "7")]
        pub vendor_extension: Vec<NamedAny>,
    }

    /// `openapi.v2.Oauth2Scopes`
    #[derive(Clone, PartialEq, Message)]
    pub struct Oauth2Scopes {
        #[prost(message, repeated, tag = "1")]
        pub additional_properties: Vec<NamedString>,
    }

    /// `openapi.v2.NamedString`
    #[derive(Clone, PartialEq, Message)]
    pub struct NamedString {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub value: String,
    }

    /// `openapi.v2.SecurityRequirement`
    #[derive(Clone, PartialEq, Message)]
    pub struct SecurityRequirement {
        #[prost(message, repeated, tag = "1")]
        pub additional_properties: Vec<NamedStringArray>,
    }

    /// `openapi.v2.NamedStringArray`
    #[derive(Clone, PartialEq, Message)]
    pub struct NamedStringArray {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<StringArray>,
    }

    /// `openapi.v2.StringArray`
    #[derive(Clone, PartialEq, Message)]
    pub struct StringArray {
        #[prost(string, repeated, tag = "1")]
        pub value: Vec<String>,
    }
}

/// The protobuf encoding of the OpenAPI v2 JSON `document`.
pub fn encode(document: &Value) -> Vec<u8> {
    self::document(document).encode_to_vec()
}

/// The gnostic message of the OpenAPI v2 JSON `document`.
pub fn document(document: &Value) -> Document {
    let o = Object::of(document);
    Document {
        swagger: o.string("swagger"),
        info: o.get("info").map(info),
        host: o.string("host"),
        base_path: o.string("basePath"),
        schemes: o.strings("schemes"),
        consumes: o.strings("consumes"),
        produces: o.strings("produces"),
        paths: o.get("paths").map(paths),
        definitions: o.get("definitions").map(|d| Definitions { additional_properties: named_schemas(d) }),
        parameters: o.get("parameters").map(|p| ParameterDefinitions {
            additional_properties: Object::of(p)
                .entries()
                .filter_map(|(name, v)| Some(NamedParameter { name: name.clone(), value: Some(parameter(v)?) }))
                .collect(),
        }),
        responses: o.get("responses").map(|r| ResponseDefinitions {
            additional_properties: Object::of(r)
                .entries()
                .map(|(name, v)| NamedResponse { name: name.clone(), value: Some(response(v)) })
                .collect(),
        }),
        security: o.array("security").map(security_requirement).collect(),
        security_definitions: o.get("securityDefinitions").map(security_definitions),
        tags: o.array("tags").map(tag).collect(),
        external_docs: o.get("externalDocs").map(external_docs),
        vendor_extension: o.extensions(),
    }
}

/// A JSON object read as gnostic reads a YAML mapping: a missing key, or a value of another
/// type than the field's, leaves the field at its default.
struct Object<'a>(Option<&'a Map<String, Value>>);

impl<'a> Object<'a> {
    fn of(value: &'a Value) -> Self {
        Self(value.as_object())
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.0.and_then(|m| m.get(key))
    }

    fn entries(&self) -> impl Iterator<Item = (&'a String, &'a Value)> + use<'a> {
        self.0.into_iter().flatten()
    }

    /// A string; an integer as its text, as gnostic's `StringForScalarNode` takes it.
    fn string(&self, key: &str) -> String {
        self.get(key).map(scalar_string).unwrap_or_default()
    }

    fn boolean(&self, key: &str) -> bool {
        self.get(key).and_then(Value::as_bool).unwrap_or_default()
    }

    fn float(&self, key: &str) -> f64 {
        self.get(key).and_then(Value::as_f64).unwrap_or_default()
    }

    /// An integer (a JSON number without a fraction that fits an int64).
    fn int(&self, key: &str) -> i64 {
        self.get(key).and_then(Value::as_i64).unwrap_or_default()
    }

    /// The strings (integers as their digits, nulls as empty strings) of an array, other items
    /// left out, as gnostic's `StringArrayForSequenceNode` takes them.
    fn strings(&self, key: &str) -> Vec<String> {
        let scalar = |v: &&Value| v.is_string() || v.is_i64() || v.is_u64() || v.is_null();
        self.array(key).filter(scalar).map(scalar_string).collect()
    }

    fn array(&self, key: &str) -> impl Iterator<Item = &'a Value> + use<'a> {
        self.get(key).and_then(Value::as_array).into_iter().flatten()
    }

    fn any(&self, key: &str) -> Option<Any> {
        self.get(key).map(any)
    }

    fn anys(&self, key: &str) -> Vec<Any> {
        self.array(key).map(any).collect()
    }

    /// The vendor extensions: every `x-` key, in order.
    fn extensions(&self) -> Vec<NamedAny> {
        self.entries()
            .filter(|(k, _)| k.starts_with("x-"))
            .map(|(k, v)| NamedAny { name: k.clone(), value: Some(any(v)) })
            .collect()
    }
}

/// A scalar's text as gnostic's `StringForScalarNode` gives it: a string, an integer's digits,
/// empty for anything else.
fn scalar_string(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
        _ => String::new(),
    }
}

/// `value` as gnostic's `NewAny` holds it: as YAML text, in block style. Strings YAML 1.1 would
/// read as something else (`yes`, `on`) are quoted, which gnostic's go-yaml v3 does not do but
/// readers on go-yaml v2 (kube-openapi's) need. JSON text is the fallback, as JSON is YAML too
/// (serialising a JSON value to YAML does not fail in practice).
pub fn any(value: &Value) -> Any {
    let yaml = serde_saphyr::to_string(value).or_else(|_| serde_json::to_string(value)).unwrap_or_default();
    Any { yaml }
}

fn info(value: &Value) -> Info {
    let o = Object::of(value);
    Info {
        title: o.string("title"),
        version: o.string("version"),
        description: o.string("description"),
        terms_of_service: o.string("termsOfService"),
        contact: o.get("contact").map(|c| {
            let c = Object::of(c);
            Contact {
                name: c.string("name"),
                url: c.string("url"),
                email: c.string("email"),
                vendor_extension: c.extensions(),
            }
        }),
        license: o.get("license").map(|l| {
            let l = Object::of(l);
            License { name: l.string("name"), url: l.string("url"), vendor_extension: l.extensions() }
        }),
        vendor_extension: o.extensions(),
    }
}

fn external_docs(value: &Value) -> ExternalDocs {
    let o = Object::of(value);
    ExternalDocs { description: o.string("description"), url: o.string("url"), vendor_extension: o.extensions() }
}

fn tag(value: &Value) -> Tag {
    let o = Object::of(value);
    Tag {
        name: o.string("name"),
        description: o.string("description"),
        external_docs: o.get("externalDocs").map(external_docs),
        vendor_extension: o.extensions(),
    }
}

/// The paths (keys starting with `/`) and the vendor extensions of `paths`.
fn paths(value: &Value) -> Paths {
    let o = Object::of(value);
    Paths {
        vendor_extension: o.extensions(),
        path: o
            .entries()
            .filter(|(k, _)| k.starts_with('/'))
            .map(|(k, v)| NamedPathItem { name: k.clone(), value: Some(path_item(v)) })
            .collect(),
    }
}

fn path_item(value: &Value) -> PathItem {
    let o = Object::of(value);
    let op = |method: &str| o.get(method).map(operation);
    PathItem {
        r#ref: o.string("$ref"),
        get: op("get"),
        put: op("put"),
        post: op("post"),
        delete: op("delete"),
        options: op("options"),
        head: op("head"),
        patch: op("patch"),
        parameters: o.array("parameters").filter_map(parameters_item).collect(),
        vendor_extension: o.extensions(),
    }
}

fn operation(value: &Value) -> Operation {
    let o = Object::of(value);
    Operation {
        tags: o.strings("tags"),
        summary: o.string("summary"),
        description: o.string("description"),
        external_docs: o.get("externalDocs").map(external_docs),
        operation_id: o.string("operationId"),
        produces: o.strings("produces"),
        consumes: o.strings("consumes"),
        parameters: o.array("parameters").filter_map(parameters_item).collect(),
        responses: o.get("responses").map(responses),
        schemes: o.strings("schemes"),
        deprecated: o.boolean("deprecated"),
        security: o.array("security").map(security_requirement).collect(),
        vendor_extension: o.extensions(),
    }
}

fn json_reference(o: &Object) -> JsonReference {
    JsonReference { r#ref: o.string("$ref"), description: o.string("description") }
}

/// A parameter, or a reference to one when it has a `$ref` (gnostic tries the reference last,
/// and it takes anything with a `$ref`); `None` for a parameter `in` no known place.
fn parameters_item(value: &Value) -> Option<ParametersItem> {
    let o = Object::of(value);
    let oneof = if o.get("$ref").is_some() {
        parameters_item::Oneof::JsonReference(json_reference(&o))
    } else {
        parameters_item::Oneof::Parameter(parameter(value)?)
    };
    Some(ParametersItem { oneof: Some(oneof) })
}

/// A parameter of the kind its `in` names; `None` for an unknown place.
fn parameter(value: &Value) -> Option<Parameter> {
    use non_body_parameter::Oneof as NonBody;
    let o = Object::of(value);
    let non_body = match o.string("in").as_str() {
        "body" => return Some(Parameter { oneof: Some(parameter::Oneof::BodyParameter(body_parameter(&o))) }),
        "header" => NonBody::HeaderParameterSubSchema(header_parameter(&o)),
        "formData" => NonBody::FormDataParameterSubSchema(form_data_parameter(&o)),
        "query" => NonBody::QueryParameterSubSchema(query_parameter(&o)),
        "path" => NonBody::PathParameterSubSchema(path_parameter(&o)),
        _ => return None,
    };
    let non_body = NonBodyParameter { oneof: Some(non_body) };
    Some(Parameter { oneof: Some(parameter::Oneof::NonBodyParameter(non_body)) })
}

fn body_parameter(o: &Object) -> BodyParameter {
    BodyParameter {
        description: o.string("description"),
        name: o.string("name"),
        r#in: o.string("in"),
        required: o.boolean("required"),
        schema: o.get("schema").map(schema),
        vendor_extension: o.extensions(),
    }
}

/// The fields every primitive-typed value shares (non-body parameters, headers, their items).
struct Primitive {
    r#type: String,
    format: String,
    items: Option<Box<PrimitivesItems>>,
    collection_format: String,
    default: Option<Any>,
    maximum: f64,
    exclusive_maximum: bool,
    minimum: f64,
    exclusive_minimum: bool,
    max_length: i64,
    min_length: i64,
    pattern: String,
    max_items: i64,
    min_items: i64,
    unique_items: bool,
    r#enum: Vec<Any>,
    multiple_of: f64,
    vendor_extension: Vec<NamedAny>,
}

fn primitive(o: &Object) -> Primitive {
    Primitive {
        r#type: o.string("type"),
        format: o.string("format"),
        items: o.get("items").map(|i| Box::new(primitives_items(i))),
        collection_format: o.string("collectionFormat"),
        default: o.any("default"),
        maximum: o.float("maximum"),
        exclusive_maximum: o.boolean("exclusiveMaximum"),
        minimum: o.float("minimum"),
        exclusive_minimum: o.boolean("exclusiveMinimum"),
        max_length: o.int("maxLength"),
        min_length: o.int("minLength"),
        pattern: o.string("pattern"),
        max_items: o.int("maxItems"),
        min_items: o.int("minItems"),
        unique_items: o.boolean("uniqueItems"),
        r#enum: o.anys("enum"),
        multiple_of: o.float("multipleOf"),
        vendor_extension: o.extensions(),
    }
}

fn primitives_items(value: &Value) -> PrimitivesItems {
    let p = primitive(&Object::of(value));
    PrimitivesItems {
        r#type: p.r#type,
        format: p.format,
        items: p.items,
        collection_format: p.collection_format,
        default: p.default,
        maximum: p.maximum,
        exclusive_maximum: p.exclusive_maximum,
        minimum: p.minimum,
        exclusive_minimum: p.exclusive_minimum,
        max_length: p.max_length,
        min_length: p.min_length,
        pattern: p.pattern,
        max_items: p.max_items,
        min_items: p.min_items,
        unique_items: p.unique_items,
        r#enum: p.r#enum,
        multiple_of: p.multiple_of,
        vendor_extension: p.vendor_extension,
    }
}

fn header_parameter(o: &Object) -> HeaderParameterSubSchema {
    let p = primitive(o);
    HeaderParameterSubSchema {
        required: o.boolean("required"),
        r#in: o.string("in"),
        description: o.string("description"),
        name: o.string("name"),
        r#type: p.r#type,
        format: p.format,
        items: p.items,
        collection_format: p.collection_format,
        default: p.default,
        maximum: p.maximum,
        exclusive_maximum: p.exclusive_maximum,
        minimum: p.minimum,
        exclusive_minimum: p.exclusive_minimum,
        max_length: p.max_length,
        min_length: p.min_length,
        pattern: p.pattern,
        max_items: p.max_items,
        min_items: p.min_items,
        unique_items: p.unique_items,
        r#enum: p.r#enum,
        multiple_of: p.multiple_of,
        vendor_extension: p.vendor_extension,
    }
}

fn form_data_parameter(o: &Object) -> FormDataParameterSubSchema {
    let p = primitive(o);
    FormDataParameterSubSchema {
        required: o.boolean("required"),
        r#in: o.string("in"),
        description: o.string("description"),
        name: o.string("name"),
        allow_empty_value: o.boolean("allowEmptyValue"),
        r#type: p.r#type,
        format: p.format,
        items: p.items,
        collection_format: p.collection_format,
        default: p.default,
        maximum: p.maximum,
        exclusive_maximum: p.exclusive_maximum,
        minimum: p.minimum,
        exclusive_minimum: p.exclusive_minimum,
        max_length: p.max_length,
        min_length: p.min_length,
        pattern: p.pattern,
        max_items: p.max_items,
        min_items: p.min_items,
        unique_items: p.unique_items,
        r#enum: p.r#enum,
        multiple_of: p.multiple_of,
        vendor_extension: p.vendor_extension,
    }
}

fn query_parameter(o: &Object) -> QueryParameterSubSchema {
    let p = primitive(o);
    QueryParameterSubSchema {
        required: o.boolean("required"),
        r#in: o.string("in"),
        description: o.string("description"),
        name: o.string("name"),
        allow_empty_value: o.boolean("allowEmptyValue"),
        r#type: p.r#type,
        format: p.format,
        items: p.items,
        collection_format: p.collection_format,
        default: p.default,
        maximum: p.maximum,
        exclusive_maximum: p.exclusive_maximum,
        minimum: p.minimum,
        exclusive_minimum: p.exclusive_minimum,
        max_length: p.max_length,
        min_length: p.min_length,
        pattern: p.pattern,
        max_items: p.max_items,
        min_items: p.min_items,
        unique_items: p.unique_items,
        r#enum: p.r#enum,
        multiple_of: p.multiple_of,
        vendor_extension: p.vendor_extension,
    }
}

fn path_parameter(o: &Object) -> PathParameterSubSchema {
    let p = primitive(o);
    PathParameterSubSchema {
        required: o.boolean("required"),
        r#in: o.string("in"),
        description: o.string("description"),
        name: o.string("name"),
        r#type: p.r#type,
        format: p.format,
        items: p.items,
        collection_format: p.collection_format,
        default: p.default,
        maximum: p.maximum,
        exclusive_maximum: p.exclusive_maximum,
        minimum: p.minimum,
        exclusive_minimum: p.exclusive_minimum,
        max_length: p.max_length,
        min_length: p.min_length,
        pattern: p.pattern,
        max_items: p.max_items,
        min_items: p.min_items,
        unique_items: p.unique_items,
        r#enum: p.r#enum,
        multiple_of: p.multiple_of,
        vendor_extension: p.vendor_extension,
    }
}

/// The responses by code (`200`, `default`) and the vendor extensions of `responses`.
fn responses(value: &Value) -> Responses {
    let o = Object::of(value);
    let is_code = |k: &str| k == "default" || (k.len() == 3 && k.bytes().all(|b| b.is_ascii_digit()));
    Responses {
        response_code: o
            .entries()
            .filter(|(k, _)| is_code(k))
            .map(|(k, v)| NamedResponseValue { name: k.clone(), value: Some(response_value(v)) })
            .collect(),
        vendor_extension: o.extensions(),
    }
}

/// A response, or a reference to one when it has a `$ref`.
fn response_value(value: &Value) -> ResponseValue {
    let o = Object::of(value);
    let oneof = if o.get("$ref").is_some() {
        response_value::Oneof::JsonReference(json_reference(&o))
    } else {
        response_value::Oneof::Response(response(value))
    };
    ResponseValue { oneof: Some(oneof) }
}

fn response(value: &Value) -> Response {
    let o = Object::of(value);
    Response {
        description: o.string("description"),
        schema: o.get("schema").map(schema_item),
        headers: o.get("headers").map(|h| Headers {
            additional_properties: Object::of(h)
                .entries()
                .map(|(k, v)| NamedHeader { name: k.clone(), value: Some(header(v)) })
                .collect(),
        }),
        examples: o.get("examples").map(|e| Examples {
            additional_properties: Object::of(e)
                .entries()
                .map(|(k, v)| NamedAny { name: k.clone(), value: Some(any(v)) })
                .collect(),
        }),
        vendor_extension: o.extensions(),
    }
}

fn header(value: &Value) -> Header {
    let o = Object::of(value);
    let p = primitive(&o);
    Header {
        r#type: p.r#type,
        format: p.format,
        items: p.items,
        collection_format: p.collection_format,
        default: p.default,
        maximum: p.maximum,
        exclusive_maximum: p.exclusive_maximum,
        minimum: p.minimum,
        exclusive_minimum: p.exclusive_minimum,
        max_length: p.max_length,
        min_length: p.min_length,
        pattern: p.pattern,
        max_items: p.max_items,
        min_items: p.min_items,
        unique_items: p.unique_items,
        r#enum: p.r#enum,
        multiple_of: p.multiple_of,
        description: o.string("description"),
        vendor_extension: p.vendor_extension,
    }
}

/// A response's schema: a `FileSchema` for `type: file` (gnostic tries it last, and it takes
/// only that type), a `Schema` otherwise.
fn schema_item(value: &Value) -> SchemaItem {
    let o = Object::of(value);
    let oneof = if o.string("type") == "file" {
        schema_item::Oneof::FileSchema(FileSchema {
            format: o.string("format"),
            title: o.string("title"),
            description: o.string("description"),
            default: o.any("default"),
            required: o.strings("required"),
            r#type: o.string("type"),
            read_only: o.boolean("readOnly"),
            external_docs: o.get("externalDocs").map(external_docs),
            example: o.any("example"),
            vendor_extension: o.extensions(),
        })
    } else {
        schema_item::Oneof::Schema(schema(value))
    };
    SchemaItem { oneof: Some(oneof) }
}

fn named_schemas(value: &Value) -> Vec<NamedSchema> {
    Object::of(value).entries().map(|(k, v)| NamedSchema { name: k.clone(), value: Some(schema(v)) }).collect()
}

fn schema(value: &Value) -> Schema {
    let o = Object::of(value);
    Schema {
        r#ref: o.string("$ref"),
        format: o.string("format"),
        title: o.string("title"),
        description: o.string("description"),
        default: o.any("default"),
        multiple_of: o.float("multipleOf"),
        maximum: o.float("maximum"),
        exclusive_maximum: o.boolean("exclusiveMaximum"),
        minimum: o.float("minimum"),
        exclusive_minimum: o.boolean("exclusiveMinimum"),
        max_length: o.int("maxLength"),
        min_length: o.int("minLength"),
        pattern: o.string("pattern"),
        max_items: o.int("maxItems"),
        min_items: o.int("minItems"),
        unique_items: o.boolean("uniqueItems"),
        max_properties: o.int("maxProperties"),
        min_properties: o.int("minProperties"),
        required: o.strings("required"),
        r#enum: o.anys("enum"),
        additional_properties: o.get("additionalProperties").and_then(additional_properties),
        r#type: o.get("type").map(type_item),
        items: o.get("items").map(items_item),
        all_of: o.array("allOf").map(schema).collect(),
        properties: o.get("properties").map(|p| Properties { additional_properties: named_schemas(p) }),
        discriminator: o.string("discriminator"),
        read_only: o.boolean("readOnly"),
        xml: o.get("xml").map(xml),
        external_docs: o.get("externalDocs").map(external_docs),
        example: o.any("example"),
        vendor_extension: o.extensions(),
    }
}

/// `true`/`false`, or a schema; `None` for anything else.
fn additional_properties(value: &Value) -> Option<Box<AdditionalPropertiesItem>> {
    let oneof = match value {
        Value::Bool(allowed) => additional_properties_item::Oneof::Boolean(*allowed),
        Value::Object(_) => additional_properties_item::Oneof::Schema(schema(value)),
        _ => return None,
    };
    Some(Box::new(AdditionalPropertiesItem { oneof: Some(oneof) }))
}

/// A `type`: one name, or several.
fn type_item(value: &Value) -> TypeItem {
    let text = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(_) | Value::Object(_) => None,
        other => Some(other.to_string()),
    };
    let value = match value {
        Value::Array(names) => names.iter().filter_map(text).collect(),
        one => text(one).into_iter().collect(),
    };
    TypeItem { value }
}

/// `items`: one schema, or (as JSON Schema allows) an array of them.
fn items_item(value: &Value) -> ItemsItem {
    let schema = match value {
        Value::Array(schemas) => schemas.iter().map(schema).collect(),
        one => vec![schema(one)],
    };
    ItemsItem { schema }
}

fn xml(value: &Value) -> Xml {
    let o = Object::of(value);
    Xml {
        name: o.string("name"),
        namespace: o.string("namespace"),
        prefix: o.string("prefix"),
        attribute: o.boolean("attribute"),
        wrapped: o.boolean("wrapped"),
        vendor_extension: o.extensions(),
    }
}

/// The schemes named in one entry of `security`, each with its scopes.
fn security_requirement(value: &Value) -> SecurityRequirement {
    let scopes = |v: &Value| StringArray { value: v.as_array().into_iter().flatten().map(scalar_string).collect() };
    SecurityRequirement {
        additional_properties: Object::of(value)
            .entries()
            .map(|(k, v)| NamedStringArray { name: k.clone(), value: Some(scopes(v)) })
            .collect(),
    }
}

fn security_definitions(value: &Value) -> SecurityDefinitions {
    SecurityDefinitions {
        additional_properties: Object::of(value)
            .entries()
            .map(|(k, v)| NamedSecurityDefinitionsItem { name: k.clone(), value: Some(security_scheme(v)) })
            .collect(),
    }
}

/// A security scheme of the kind its `type` (and, for OAuth 2, its `flow`) names.
fn security_scheme(value: &Value) -> SecurityDefinitionsItem {
    use security_definitions_item::Oneof;
    let o = Object::of(value);
    let oauth2 = |url: &str| Oauth2Security {
        r#type: o.string("type"),
        flow: o.string("flow"),
        scopes: o.get("scopes").map(oauth2_scopes),
        url: o.string(url),
        description: o.string("description"),
        vendor_extension: o.extensions(),
    };
    let oneof = match (o.string("type").as_str(), o.string("flow").as_str()) {
        ("basic", _) => Some(Oneof::BasicAuthenticationSecurity(BasicAuthenticationSecurity {
            r#type: o.string("type"),
            description: o.string("description"),
            vendor_extension: o.extensions(),
        })),
        ("apiKey", _) => Some(Oneof::ApiKeySecurity(ApiKeySecurity {
            r#type: o.string("type"),
            name: o.string("name"),
            r#in: o.string("in"),
            description: o.string("description"),
            vendor_extension: o.extensions(),
        })),
        ("oauth2", "implicit") => Some(Oneof::Oauth2ImplicitSecurity(oauth2("authorizationUrl"))),
        ("oauth2", "password") => Some(Oneof::Oauth2PasswordSecurity(oauth2("tokenUrl"))),
        ("oauth2", "application") => Some(Oneof::Oauth2ApplicationSecurity(oauth2("tokenUrl"))),
        ("oauth2", "accessCode") => Some(Oneof::Oauth2AccessCodeSecurity(Oauth2AccessCodeSecurity {
            r#type: o.string("type"),
            flow: o.string("flow"),
            scopes: o.get("scopes").map(oauth2_scopes),
            authorization_url: o.string("authorizationUrl"),
            token_url: o.string("tokenUrl"),
            description: o.string("description"),
            vendor_extension: o.extensions(),
        })),
        _ => None,
    };
    SecurityDefinitionsItem { oneof }
}

fn oauth2_scopes(value: &Value) -> Oauth2Scopes {
    Oauth2Scopes {
        additional_properties: Object::of(value)
            .entries()
            .map(|(k, v)| NamedString { name: k.clone(), value: scalar_string(v) })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::openapi::{Documents, v2_document};
    use crate::machinery::identity::Identity;
    use crate::machinery::resource::ResourceDescriptor;
    use crate::machinery::testing::{Widget, WidgetV1beta1};
    use proptest::prelude::{
        Just, Strategy, TestCaseError, any as arbitrary, prop, prop_assert_eq, prop_oneof, proptest,
    };
    use serde_json::json;

    const IDENTITY: Identity = Identity::new("test-apiserver", "1.2.3");
    const GROUP: &str = "test.example.com";
    const ITEM: &str = "/apis/test.example.com/v1beta1/namespaces/{namespace}/widgets/{name}";
    const WIDGET: &str = "com.example.test.v1beta1.Widget";

    fn json_document() -> Value {
        v2_document(
            &IDENTITY,
            GROUP,
            &[("v1beta1", vec![ResourceDescriptor::deprecated_for::<Widget, WidgetV1beta1>()])],
        )
    }

    /// The served bytes, decoded back.
    fn decoded(json: &Value) -> Document {
        Document::decode(encode(json).as_slice()).unwrap()
    }

    fn yaml(value: &Option<Any>) -> Value {
        serde_saphyr::from_str(&value.as_ref().unwrap().yaml).unwrap()
    }

    fn path_item<'a>(document: &'a Document, path: &str) -> &'a PathItem {
        let paths = &document.paths.as_ref().unwrap().path;
        paths.iter().find(|p| p.name == path).and_then(|p| p.value.as_ref()).unwrap()
    }

    fn definition<'a>(document: &'a Document, name: &str) -> &'a Schema {
        let definitions = &document.definitions.as_ref().unwrap().additional_properties;
        definitions.iter().find(|d| d.name == name).and_then(|d| d.value.as_ref()).unwrap()
    }

    fn property<'a>(schema: &'a Schema, name: &str) -> &'a Schema {
        let properties = &schema.properties.as_ref().unwrap().additional_properties;
        properties.iter().find(|p| p.name == name).and_then(|p| p.value.as_ref()).unwrap()
    }

    fn extension<'a>(extensions: &'a [NamedAny], name: &str) -> &'a Option<Any> {
        &extensions.iter().find(|e| e.name == name).unwrap().value
    }

    fn non_body(item: &ParametersItem) -> &non_body_parameter::Oneof {
        match &item.oneof {
            Some(parameters_item::Oneof::Parameter(Parameter {
                oneof: Some(parameter::Oneof::NonBodyParameter(NonBodyParameter { oneof: Some(p) })),
            })) => p,
            other => panic!("not a non-body parameter: {other:?}"),
        }
    }

    #[test]
    fn every_path_operation_parameter_and_response_is_encoded() {
        let json = json_document();
        let document = decoded(&json);
        assert_eq!(
            (document.swagger.as_str(), document.info.as_ref().unwrap().title.as_str()),
            ("2.0", "test-apiserver")
        );
        let names: Vec<&str> = document.paths.as_ref().unwrap().path.iter().map(|p| p.name.as_str()).collect();
        let expected: Vec<&str> = json["paths"].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(names, expected);
        for (path, item) in json["paths"].as_object().unwrap() {
            let ours = path_item(&document, path);
            assert_eq!(ours.parameters.len(), item["parameters"].as_array().map_or(0, Vec::len), "{path}");
            let operations = [
                ("get", &ours.get),
                ("put", &ours.put),
                ("post", &ours.post),
                ("delete", &ours.delete),
                ("patch", &ours.patch),
            ];
            for (method, operation) in operations {
                let Some(expected) = item.get(method) else {
                    assert!(operation.is_none(), "{method} {path}");
                    continue;
                };
                let operation = operation.as_ref().unwrap();
                assert_eq!(operation.operation_id, expected["operationId"].as_str().unwrap());
                assert_eq!(operation.parameters.len(), expected["parameters"].as_array().map_or(0, Vec::len));
                let codes: Vec<&str> =
                    operation.responses.as_ref().unwrap().response_code.iter().map(|r| r.name.as_str()).collect();
                let expected_codes: Vec<&str> =
                    expected["responses"].as_object().unwrap().keys().map(String::as_str).collect();
                assert_eq!(codes, expected_codes, "{method} {path}");
                let extensions: Vec<(&str, Value)> =
                    operation.vendor_extension.iter().map(|e| (e.name.as_str(), yaml(&e.value))).collect();
                let expected_extensions: Vec<(&str, Value)> = expected
                    .as_object()
                    .unwrap()
                    .iter()
                    .filter(|(k, _)| k.starts_with("x-"))
                    .map(|(k, v)| (k.as_str(), v.clone()))
                    .collect();
                assert_eq!(extensions, expected_extensions, "{method} {path}");
            }
        }
        let put = path_item(&document, ITEM).put.as_ref().unwrap();
        assert_eq!(put.consumes, ["application/json", "application/yaml"]);
        let ok = put.responses.as_ref().unwrap().response_code.iter().find(|r| r.name == "200").unwrap();
        let Some(ResponseValue { oneof: Some(response_value::Oneof::Response(response)) }) = &ok.value else {
            panic!("{ok:?}")
        };
        let Some(SchemaItem { oneof: Some(schema_item::Oneof::Schema(schema)) }) = &response.schema else {
            panic!("{response:?}")
        };
        assert_eq!(schema.r#ref, format!("#/definitions/{WIDGET}"));
    }

    #[test]
    fn definitions_keep_their_properties_required_lists_and_group_version_kind() {
        let json = json_document();
        let document = decoded(&json);
        for (name, expected) in json["definitions"].as_object().unwrap() {
            let schema = definition(&document, name);
            let required: Vec<&str> =
                expected["required"].as_array().into_iter().flatten().map(|r| r.as_str().unwrap()).collect();
            assert_eq!(schema.required, required, "{name}");
            let properties: Vec<&str> =
                schema.properties.iter().flat_map(|p| &p.additional_properties).map(|p| p.name.as_str()).collect();
            let expected_properties: Vec<&str> =
                expected["properties"].as_object().into_iter().flatten().map(|(k, _)| k.as_str()).collect();
            assert_eq!(properties, expected_properties, "{name}");
        }
        let widget = definition(&document, WIDGET);
        assert_eq!(widget.r#type.as_ref().unwrap().value, ["object"]);
        let gvk = yaml(extension(&widget.vendor_extension, "x-kubernetes-group-version-kind"));
        assert_eq!(gvk, json!([{"group": GROUP, "kind": "Widget", "version": "v1beta1"}]));
        let metadata = property(widget, "metadata");
        assert_eq!(metadata.r#ref, "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
        assert!(metadata.description.starts_with("Standard object's metadata"));
        let size = property(property(widget, "spec"), "size");
        assert_eq!((size.minimum, size.exclusive_minimum), (0.0, true));
        assert_eq!(
            definition(&document, "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent").required,
            ["type", "object"]
        );
        let meta = definition(&document, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
        let owners = property(meta, "ownerReferences");
        assert_eq!(yaml(extension(&owners.vendor_extension, "x-kubernetes-patch-merge-key")), json!("uid"));
        assert_eq!(owners.items.as_ref().unwrap().schema.len(), 1);
    }

    #[test]
    fn additional_properties_are_a_boolean_or_a_schema() {
        let json = json!({"swagger": "2.0", "definitions": {"T": {"type": "object", "properties": {
            "open": {"type": "object", "additionalProperties": true},
            "closed": {"type": "object", "additionalProperties": false},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "none": {"type": "object"},
        }}}});
        let document = decoded(&json);
        let t = definition(&document, "T");
        let additional = |name: &str| property(t, name).additional_properties.as_ref().and_then(|a| a.oneof.clone());
        use additional_properties_item::Oneof;
        assert_eq!(additional("open"), Some(Oneof::Boolean(true)));
        assert_eq!(additional("closed"), Some(Oneof::Boolean(false)), "false is encoded, not left out");
        let Some(Oneof::Schema(labels)) = additional("labels") else { panic!() };
        assert_eq!(labels.r#type.unwrap().value, ["string"]);
        assert_eq!(additional("none"), None);
        let widgets = decoded(&json_document());
        let labels = property(definition(&widgets, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"), "labels");
        assert!(matches!(
            labels.additional_properties.as_deref(),
            Some(AdditionalPropertiesItem { oneof: Some(Oneof::Schema(_)) })
        ));
    }

    #[test]
    fn parameters_are_of_the_kind_their_place_says() {
        let document = decoded(&json_document());
        let item = path_item(&document, ITEM);
        let name = item.parameters.iter().map(non_body).find_map(|p| match p {
            non_body_parameter::Oneof::PathParameterSubSchema(p) if p.name == "name" => Some(p),
            _ => None,
        });
        let name = name.unwrap();
        assert_eq!((name.r#in.as_str(), name.required, name.r#type.as_str()), ("path", true, "string"));
        let pretty = item.parameters.iter().map(non_body).find_map(|p| match p {
            non_body_parameter::Oneof::QueryParameterSubSchema(p) if p.name == "pretty" => Some(p),
            _ => None,
        });
        let pretty = pretty.unwrap();
        assert_eq!((pretty.r#in.as_str(), pretty.unique_items, pretty.required), ("query", true, false));
        let put = item.put.as_ref().unwrap();
        let body = put.parameters.iter().find_map(|p| match &p.oneof {
            Some(parameters_item::Oneof::Parameter(Parameter { oneof: Some(parameter::Oneof::BodyParameter(b)) })) => {
                Some(b)
            }
            _ => None,
        });
        let body = body.unwrap();
        assert_eq!((body.name.as_str(), body.r#in.as_str(), body.required), ("body", "body", true));
        assert_eq!(body.schema.as_ref().unwrap().r#ref, format!("#/definitions/{WIDGET}"));
    }

    #[test]
    fn references_headers_forms_and_files_are_encoded() {
        use non_body_parameter::Oneof::{
            FormDataParameterSubSchema, HeaderParameterSubSchema, QueryParameterSubSchema,
        };
        let json = json!({"swagger": "2.0", "paths": {"/f": {"x-p": 1, "post": {
            "parameters": [
                {"$ref": "#/parameters/q"},
                {"name": "X-H", "in": "header", "type": "array", "items": {"type": "integer", "maximum": 5}},
                {"name": "f", "in": "formData", "type": "file"},
                {"name": "n", "in": "query", "type": "number", "default": 2.5, "enum": [1, "two"]},
            ],
            "responses": {"default": {"description": "d", "schema": {"type": "file"}}, "404": {"$ref": "#/nf"}},
        }}}});
        let document = decoded(&json);
        let item = path_item(&document, "/f");
        assert_eq!(yaml(extension(&item.vendor_extension, "x-p")), json!(1));
        let parameters = &item.post.as_ref().unwrap().parameters;
        let Some(parameters_item::Oneof::JsonReference(reference)) = &parameters[0].oneof else { panic!() };
        assert_eq!(reference.r#ref, "#/parameters/q");
        let HeaderParameterSubSchema(header) = non_body(&parameters[1]) else { panic!() };
        assert_eq!(header.items.as_ref().map(|i| (i.r#type.as_str(), i.maximum)), Some(("integer", 5.0)));
        assert!(matches!(non_body(&parameters[2]), FormDataParameterSubSchema(f) if f.r#type == "file"));
        let QueryParameterSubSchema(query) = non_body(&parameters[3]) else { panic!() };
        assert_eq!(yaml(&query.default), json!(2.5));
        let values: Vec<Value> = query.r#enum.iter().map(|e| yaml(&Some(e.clone()))).collect();
        assert_eq!(values, [json!(1), json!("two")]);
        let responses = &item.post.as_ref().unwrap().responses.as_ref().unwrap().response_code;
        let oneofs: Vec<_> = responses.iter().map(|r| r.value.as_ref().and_then(|v| v.oneof.as_ref())).collect();
        assert!(matches!(oneofs[0], Some(response_value::Oneof::JsonReference(r)) if r.r#ref == "#/nf"));
        let Some(response_value::Oneof::Response(file)) = oneofs[1] else { panic!() };
        assert!(matches!(&file.schema, Some(SchemaItem { oneof: Some(schema_item::Oneof::FileSchema(_)) })));
    }

    #[test]
    fn security_schemes_are_of_their_type_and_flow() {
        use security_definitions_item::Oneof;
        let json = json!({
            "swagger": "2.0",
            "security": [{"BearerToken": []}, {"oauth": ["read"]}],
            "securityDefinitions": {
                "BearerToken": {"type": "apiKey", "name": "authorization", "in": "header"},
                "basic": {"type": "basic"},
                "implicit": {"type": "oauth2", "flow": "implicit", "authorizationUrl": "a"},
                "oauth": {"type": "oauth2", "flow": "accessCode", "tokenUrl": "t", "scopes": {"read": "r"}},
            },
        });
        let document = decoded(&json);
        let schemes = &document.security_definitions.as_ref().unwrap().additional_properties;
        let kinds: Vec<(&str, u8)> = schemes
            .iter()
            .map(|s| match s.value.as_ref().and_then(|v| v.oneof.as_ref()) {
                Some(Oneof::BasicAuthenticationSecurity(_)) => (s.name.as_str(), 1),
                Some(Oneof::ApiKeySecurity(k)) if k.r#in == "header" => (s.name.as_str(), 2),
                Some(Oneof::Oauth2ImplicitSecurity(i)) if i.url == "a" => (s.name.as_str(), 3),
                Some(Oneof::Oauth2AccessCodeSecurity(c)) if c.token_url == "t" => (s.name.as_str(), 6),
                _ => (s.name.as_str(), 0),
            })
            .collect();
        assert_eq!(kinds, [("BearerToken", 2), ("basic", 1), ("implicit", 3), ("oauth", 6)]);
        let security: Vec<(&str, &[String])> = document
            .security
            .iter()
            .flat_map(|s| &s.additional_properties)
            .map(|s| (s.name.as_str(), s.value.as_ref().unwrap().value.as_slice()))
            .collect();
        assert_eq!(security, [("BearerToken", &[][..]), ("oauth", &["read".to_string()][..])]);
    }

    #[test]
    fn the_served_protobuf_is_built_with_the_documents_and_hashed_apart() {
        let versions = [("v1beta1", vec![ResourceDescriptor::deprecated_for::<Widget, WidgetV1beta1>()])];
        let documents = Documents::build(&IDENTITY, GROUP, &versions);
        assert_ne!(documents.v2_protobuf.hash, documents.v2.hash);
        assert_eq!(documents.v2_protobuf.hash.len(), 128);
        let json: Value = serde_json::from_slice(&documents.v2.body).unwrap();
        assert_eq!(Document::decode(documents.v2_protobuf.body.clone()).unwrap(), document(&json));
    }

    #[test]
    fn values_are_yaml_that_reads_back_as_the_json_value() {
        let values = [
            json!([{"group": "farm.example.com", "kind": "Llama", "version": "v1"}]),
            json!("merge"),
            json!([
                "true", "1", "yes", "on", "y", "null", "~", "", " lead", "a: b", "#c", "- d", "0x1F", "1e3", ".inf"
            ]),
            json!("multi\nline\n"),
            json!("no trailing\nnewline"),
            json!({"nested": {"list": [1, 2.5, -0.5, 1e20, null, true, {}], "empty": []}}),
            json!(null),
            json!(false),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(1.0e-7),
            json!({"": 1, "true": 2, "key: colon": 3}),
        ];
        for value in values {
            let text = any(&value).yaml;
            let back: Value = serde_saphyr::from_str(&text).unwrap();
            assert_eq!(back, value, "{text:?}");
        }
        assert_eq!(any(&json!([{"group": "g"}])).yaml, "- group: g\n", "block style, as gnostic writes it");
    }

    /// Any JSON value, possibly nested.
    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            arbitrary::<bool>().prop_map(Value::from),
            arbitrary::<i64>().prop_map(Value::from),
            arbitrary::<u64>().prop_map(Value::from),
            arbitrary::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
            ".*".prop_map(Value::from),
            "[a-z0-9:#\\- \n'\"]{0,12}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map(".*", inner, 0..5).prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Whatever the value, its YAML reads back as it.
        #[test]
        fn any_value_round_trips_through_its_yaml(value in json_value()) {
            let yaml = any(&value).yaml;
            let back: Value = serde_saphyr::from_str(&yaml).map_err(|e| TestCaseError::fail(format!("{e}: {yaml:?}")))?;
            prop_assert_eq!(back, value, "{:?}", yaml);
        }
    }
}
