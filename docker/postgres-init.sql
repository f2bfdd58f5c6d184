-- The Iceberg catalog of the valid and quarantine tables (pyiceberg's SQL catalog makes its own
-- tables in it on first use), beside Airflow's metadata database on the same server.
CREATE DATABASE foodtaster_catalog OWNER airflow;
