"""Python side of the lakehouse project: runtime setup, data generation, verification and admin CLIs."""
