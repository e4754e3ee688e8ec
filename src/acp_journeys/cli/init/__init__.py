"""`acp-journeys init`: write the PR-check workflow (`workflow`) or a matrix of agents (`matrix`)."""
