//! Transaction control: a transaction's end closes the cursors not declared WITH HOLD.
//! (BEGIN, SAVEPOINT and RELEASE only answer: each statement commits on its own.)

use crate::session::{Outcome, Session};

impl Session {
    /// COMMIT or ROLLBACK (`tag`): close the cursors not declared WITH HOLD.
    pub(crate) fn end_transaction(&mut self, tag: &str) -> Outcome {
        self.cursors.retain(|_, c| c.hold);
        Outcome::TxnEnd(tag.into())
    }
}
