//! What a host's stored state says to a fleet's tools — Prometheus metrics and Kubernetes node
//! labels —, rendered here so a toolstack prints exactly what `mxctl metrics` and `mxctl labels`
//! print, and never says the cards hold a layout the state does not say they hold now.

mod labels;
mod metrics;

pub use labels::{LABEL_NAMESPACE, render_labels};
pub use metrics::{MetricsError, render_metrics};
