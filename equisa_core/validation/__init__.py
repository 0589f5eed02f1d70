"""The Validation loop: the checks a patch candidate goes through, overfitting, the differential test,
behavioural divergence, patterns of wrong patches and the generated tests that may judge a patch."""
