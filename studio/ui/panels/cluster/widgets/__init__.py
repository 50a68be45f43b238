"""The cluster panel's widgets: rank table with stacked bars, communication heat map, memory tab."""
