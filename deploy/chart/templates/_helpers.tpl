{{/*
A component's image: REPOSITORY@DIGEST when a digest is given (what a
release publishes and deploy/install.sh --images pins), else
REPOSITORY:TAG, the tag defaulting to the chart's appVersion.
Called with (dict "image" .Values.COMPONENT.image "root" $).
*/}}
{{- define "pakket.image" -}}
{{- $image := .image -}}
{{- if $image.digest -}}
{{- if not (regexMatch "^sha256:[0-9a-f]{64}$" $image.digest) -}}
{{- fail (printf "image %s: digest %q is not sha256:<64 hex digits>" $image.repository $image.digest) -}}
{{- end -}}
{{- printf "%s@%s" $image.repository $image.digest -}}
{{- else -}}
{{- printf "%s:%s" $image.repository (default .root.Chart.AppVersion $image.tag) -}}
{{- end -}}
{{- end -}}
