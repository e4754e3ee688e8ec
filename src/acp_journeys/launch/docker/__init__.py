"""Agents in containers, one per journey, through the Docker engine.

Importing this package imports nothing of docker's: `engine` does, when a docker run starts.
"""
