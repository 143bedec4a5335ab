# SHA-256 of each precompiled NIF library this version may download, by
# artifact name; written by `mix ex_bashkit.package` when a release is
# built (one run per target). Empty: no release has been published yet, so
# every install builds from source with cargo (see the README's
# "Installing").
%{}
