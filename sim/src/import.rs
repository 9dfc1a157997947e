//! The importers (`mnsim-import`'s `import`, re-exported whole) and what sits above both
//! them and the planner: planning an imported graph's plan `auto` ([`plan_auto`]) and a
//! plan where it runs ([`plan_open`]).

mod auto;
mod replan;

pub use auto::{PLAN_TOP, PLAN_WORK, plan_auto, plan_auto_with, take_plan};
pub use mnsim_import::import::*;
pub use replan::plan_open;
