"""A small static blog of ours whose comment threads Isso serves, both from one origin."""
