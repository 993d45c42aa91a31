module farm-apiserver/tools/json-patch-oracle

go 1.26.0

require gopkg.in/evanphx/json-patch.v4 v4.13.0
