"""After the search: confirm and certify the winner on fresh servers, verify a frozen one, state the headline."""
