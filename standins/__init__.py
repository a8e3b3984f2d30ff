"""Local stand-ins that speak the real wire formats of Slack's Web API, Vertex AI and Cloud Logging REST, and
Google's OIDC certificate endpoint, on loopback ports. `trainmedic demo` and the tests talk to them through the
real client libraries (slack_sdk, google-cloud-aiplatform, google-cloud-logging, google-auth)."""
