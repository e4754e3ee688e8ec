"""What users read: the console table, result.json, JUnit and the GitHub summary."""
