//! Helpers for status conditions, with the semantics of apimachinery's `meta.SetStatusCondition`:
//! `lastTransitionTime` only moves when the condition's status changes, so writing the same
//! condition twice is a no-op and reconciles stay idempotent.

use k8s_openapi::{
    apimachinery::pkg::apis::meta::v1::{Condition, Time},
    jiff::Timestamp,
};

/// Builds a condition stamped with the current time.
pub fn condition(
    type_: &str,
    status: bool,
    reason: &str,
    message: impl Into<String>,
    generation: Option<i64>,
) -> Condition {
    Condition {
        type_: type_.to_owned(),
        status: if status { "True" } else { "False" }.to_owned(),
        reason: reason.to_owned(),
        message: message.into(),
        observed_generation: generation,
        last_transition_time: Time(Timestamp::now()),
    }
}

/// Adds or replaces the condition of the same type, keeping its transition time when the
/// status is unchanged.
pub fn set_condition(conditions: &mut Vec<Condition>, mut new: Condition) {
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        Some(existing) => {
            if existing.status == new.status {
                new.last_transition_time = existing.last_transition_time.clone();
            }
            *existing = new;
        }
        None => conditions.push(new),
    }
}

/// Whether the condition of `type_` is present with status "True".
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    conditions
        .iter()
        .any(|c| c.type_ == type_ && c.status == "True")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transition_time_moves_only_when_status_changes() {
        let mut conditions = vec![];
        let mut first = condition("Ready", true, "Reconciled", "ok", Some(1));
        first.last_transition_time = Time(Timestamp::UNIX_EPOCH);
        set_condition(&mut conditions, first);

        set_condition(
            &mut conditions,
            condition("Ready", true, "Reconciled", "still ok", Some(2)),
        );
        assert_eq!(conditions.len(), 1);
        assert_eq!(
            conditions[0].last_transition_time,
            Time(Timestamp::UNIX_EPOCH)
        );
        assert_eq!(conditions[0].observed_generation, Some(2));

        set_condition(
            &mut conditions,
            condition("Ready", false, "Failed", "broken", Some(3)),
        );
        assert_ne!(
            conditions[0].last_transition_time,
            Time(Timestamp::UNIX_EPOCH)
        );
        assert!(!is_true(&conditions, "Ready"));
    }
}
