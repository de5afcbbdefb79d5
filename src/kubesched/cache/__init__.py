"""The scheduler's cache: a columnar node table kept up to date, and assumed pods."""
