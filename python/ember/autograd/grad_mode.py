"""Placeholder: no_grad & co. land with the autograd bindings."""
no_grad = enable_grad = set_grad_enabled = inference_mode = None
