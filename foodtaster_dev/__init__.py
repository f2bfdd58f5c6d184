"""Foodtaster's dev tools: what tests, demos and benchmarks use and a deployment never runs.

    sample        sample batches with each line's truth (`python -m foodtaster_dev generate-sample`)
    oracle        pandera's own verdict, one message at a time, that the engine is held to
    demo_engine   the Spark job alone on a sample batch (`python -m foodtaster_dev demo`, make demo-engine)
    demo_airflow  the pipeline under a local Airflow (make demo, make airflow)
    localenv      a self-contained local Airflow, for the demos and the end-to-end tests
    contracts     contracts no dataset of pipeline.yaml names: a checked, a crashing, a fixed one

Not in the installed distribution (pyproject.toml): it is imported from a checkout, whose
root is on the path when run from it (`python -m`, pytest, LocalAirflow's processes).
"""
