"""Everything that talks to a language model: the summarizers, the Responses API agent and its
tools, the one wrapper around ``client.responses.create``, and the offline stand-in server the
demo, the examples and the tests use instead of a real model.
"""
