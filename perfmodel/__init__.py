"""perfmodel: analytic performance and capacity model for AWS Trainium and its GPU peers."""

__version__ = "0.1.0"
