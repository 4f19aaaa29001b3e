"""gnostic's openapi.v2 messages (OpenAPIv2_pb2) and their JSON rules (rules)."""
