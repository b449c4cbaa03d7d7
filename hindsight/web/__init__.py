"""The HTTP plumbing every face shares (REST, MCP, OAuth and the server shell): the one way an
error becomes an HTTP answer, the errors only HTTP can have (a bad header, a wrong method, a
stopping server), and what a request's scope carries (its headers, the principal it acts as).
Imports the engine's errors and rules only; the faces and the shell import it."""
