//! garden-apiserver: Planters, Greenhouses and Sprinklers of garden.example.org.

mod sprinkler;

use apiserver_kit::prelude::*;
use apiserver_kit::server::ServerArgs;
use clap::Parser;

/// PlanterSpec is what grows in a planter, and in how much soil.
#[allow(clippy::duplicated_attributes)] // clippy takes two columns' `type_ = "number"` for a repeated attribute
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(group = "garden.example.org", version = "v1", kind = "Planter", namespaced, shortname = "pl")]
#[kube(status = "PlanterStatus", derive = "PartialEq")]
#[kube(doc = "Planter is a box of soil in which one kind of plant grows.")]
#[kube(
    printcolumn(name = "Plant", type_ = "string", json_path = ".spec.plant"),
    printcolumn(name = "Litres", type_ = "number", json_path = ".spec.litres"),
    printcolumn(name = "Moisture", type_ = "number", json_path = ".status.moisture")
)]
#[x_kube(
    validation = Rule::new("self.plant != 'mint' || self.litres <= 20.0").message("mint spreads: 20 litres at most")
)]
pub struct PlanterSpec {
    /// What grows in it.
    #[schemars(length(min = 1))]
    pub plant: String,
    /// How much soil it holds, in litres: more than 0.
    #[schemars(extend("minimum" = 0, "exclusiveMinimum" = true))]
    pub litres: f64,
}

/// PlanterStatus is what the gardener last measured.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct PlanterStatus {
    /// The soil's moisture, from 0 (dry) to 1 (soaked).
    #[schemars(range(min = 0, max = 1))]
    pub moisture: f64,
}

/// GreenhouseSpec is where a greenhouse stands.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(group = "garden.example.org", version = "v1", kind = "Greenhouse", shortname = "gh", derive = "PartialEq")]
#[kube(doc = "Greenhouse is a glass house that shelters planters.")]
#[kube(printcolumn(name = "Location", type_ = "string", json_path = ".spec.location"))]
pub struct GreenhouseSpec {
    /// Where it stands.
    pub location: String,
}

impl ApiResource for Planter {}
impl Strategy for Planter {}
impl ApiResource for Greenhouse {}
impl Strategy for Greenhouse {}

/// An aggregated API server of Planters and Greenhouses.
#[derive(Parser)]
struct Args {
    #[command(flatten)]
    server: ServerArgs,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The server logs through `tracing`: without a subscriber it prints nothing.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt().with_env_filter(filter).init();
    let args = Args::parse();
    let versions = &["v1", "v1beta1"];
    let server = ApiServerBuilder::new(Identity::new("garden-apiserver", "0.1.0"), "garden.example.org", versions)
        .stored(StoredResource::<Planter>::new())
        .stored(StoredResource::<Greenhouse>::new())
        .stored(StoredResource::<sprinkler::Sprinkler>::new().deprecated_at::<sprinkler::v1beta1::Sprinkler>())
        .options(args.server.options())
        .build()?;
    server.serve(args.server.listener().await?, shutdown_signal()).await?;
    Ok(())
}
