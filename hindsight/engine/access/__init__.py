"""Who a request acts as: API keys (stored hashed) and the principal they make, and the tenant
extension that turns an Authorization header into one. Imports rules and errors only."""
