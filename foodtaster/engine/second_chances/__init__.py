"""Each way back out of the quarantine that runs Spark: the retry pass and the redrive."""
