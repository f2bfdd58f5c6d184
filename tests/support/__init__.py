"""What the tests share, importable as `support.<module>` (pytest puts tests/ on the path).

    environment  the checkout's root, and `need`: skip locally, fail under CI=true
    frames       a tiny DataFrame shaped like the job's read lines (needs the `spark` fixture)
    lake         a small lake written the way the job writes it, with pyarrow and no Spark
    alerts       an alert with its trend, over a ledger and quarantine made here
    servers      loopback SMTP and webhook sinks
    jetstream    the real NATS JetStream: a stream a test, publishing, the consumer's state
    e2e          a real Airflow running the real DAG and Spark job over sample batches
    browser      Debian's chromium driven by Playwright, for the page tests
    chains       scenarios run as a chain, the later ones not run once one fails
    contracts    contracts the tests point a dataset at, apart from pipeline.yaml's
"""
