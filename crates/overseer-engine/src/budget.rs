//! Setting a budget: the most each run of a task (or of a workspace, unless
//! its task sets its own) may cost before it is paused (see the
//! orchestrator's `budget`).

use crate::settings::Scope;
use crate::Supervision;
use overseer_core::{Actor, ApiError, FieldError};

impl Supervision {
    /// Sets (or, with None, removes) the budget `max_cost` at `scope`: the
    /// task's settings when it names a task, else the workspace's. A run
    /// paused at its budget goes on once the user raises it and says so on
    /// its gate. Returns the budget set.
    pub fn set_max_cost(
        &self,
        scope: &Scope,
        max_cost: Option<f64>,
        actor: &Actor,
    ) -> Result<Option<f64>, ApiError> {
        if let Some(m) = max_cost.filter(|m| !m.is_finite() || *m <= 0.0) {
            return Err(ApiError::invalid_fields(vec![FieldError::new(
                "max_cost",
                format!("a budget of {m} cannot be: give an amount above 0 (in the currency the agent reports), or none"),
            )]));
        }
        self.change_scope(
            scope,
            actor,
            |t| t.max_cost = max_cost,
            |w| w.max_cost = max_cost,
        )?;
        // Each run's row carries the budget it is held to: pushed again.
        let ws = self.store().workspace(&scope.workspace)?;
        self.write(|tx| tx.budget_changed(ws.id, scope.task))?;
        Ok(max_cost)
    }
}
