"""What operators touch: the gate policy, alerts, the command line."""
