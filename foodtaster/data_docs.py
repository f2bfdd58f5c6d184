"""The one thing the batch gate's page (`foodtaster.engine.gate.gate.batch_page`, written by the job)
and the batches page that serves it (`foodtaster.ops.pages`) agree on: where the batch's own
verdict goes. The gate runs before the verdict is decided (`foodtaster.policy.decide`), so its
page leaves a place the batches page fills when it serves the page. A leaf module: the page
server imports no Spark through it."""

BATCH_VERDICT_START, BATCH_VERDICT_END = "<!-- batch verdict -->", "<!-- /batch verdict -->"
