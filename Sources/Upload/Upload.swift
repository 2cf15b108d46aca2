// The uploader: batches, libcurl transport, backoff and the contract's answer rules.
