"""What callers mean, and no tenant reaching another (issues 63 and 64).

- Automatic importance knows the language. A new agent's first memories were measured
  against its own memories only, so every word counted 1 and "I am allergic to peanuts"
  scored as "haha nice". word_prior (seeded from ethos/db/schema/word_prior.tsv, derived
  from wordfreq's English list) tells how common each word is; ethos_prior_words() weighs
  a text's words by it, and ethos_new_policy() blends it with the agent's own statistics
  by the words the agent has written (ethos_prior_share). An episode's emotional tone
  raises its importance. A fact carries `stated` (true unless the caller says the memory
  is a turn, as mem0's infer does): a stated memory's automatic importance never picks a
  policy shorter than the default. Existing facts are stated; no memory is re-tiered
  (decision 0023).
- The source check does not tell one agent what another holds: the write trigger refuses
  an agent role's vector of another agent first, with the row policy's own error,
  whatever the id (ethos_role_agents gives the agents of the role the caller runs as).
  The SECURITY DEFINER functions belong to ethos_definer, a role made for them.
- A recovery says whether it finished: `recoveries.status` (completed, interrupted,
  failed); rows written before are completed.
- The durable queue takes the event kind `unmatched`: a hit found only through others is
  counted, never reinforced (decision 0021).

Revision ID: 0059
Revises: 0058
Create Date: 2026-12-07
"""

from ethos.db.migrations import execute_frozen, execute_script
from ethos.db.schema import word_prior_seed

revision = "0059"
down_revision = "0058"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("0059_callers_and_tenants.sql")
    execute_script(word_prior_seed())
