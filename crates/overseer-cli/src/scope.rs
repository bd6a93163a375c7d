//! `--workspace NAME [--task ID]`: the scope the supervisor's policy, the
//! permission rules and the budget are set at.

/// Where a policy or rules apply: a workspace, or one of its tasks.
#[derive(clap::Args, Clone)]
pub struct ScopeArgs {
    #[arg(long)]
    workspace: String,
    /// A task of the workspace (its settings override the workspace's)
    #[arg(long)]
    task: Option<overseer_core::TaskId>,
}

impl ScopeArgs {
    pub fn scope(&self) -> overseer_engine::Scope {
        overseer_engine::Scope {
            workspace: self.workspace.clone(),
            task: self.task,
        }
    }
}
