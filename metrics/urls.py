from django.urls import path

from metrics import views, views_compare, views_many

app_name = "metrics"
# The evaluation pages live under /dashboard/evaluations/<id>/: evaluations.urls already
# routes /evaluations/<id>/<action>/ to its POST-only actions.
urlpatterns = [
    path("dashboard/", views.team_dashboard, name="team_dashboard"),
    path("dashboard/evaluations/<int:evaluation_id>/", views.evaluation_dashboard,
         name="evaluation_dashboard"),
    path("dashboard/evaluations/<int:evaluation_id>/live/", views.evaluation_dashboard_live,
         name="evaluation_dashboard_live"),
    path("dashboard/evaluations/<int:evaluation_id>/table/", views.evaluation_dashboard_table,
         name="evaluation_dashboard_table"),
    path("dashboard/evaluations/<int:evaluation_id>/baseline/", views.baseline,
         name="baseline"),
    path("models/<int:model_id>/history/", views.model_history, name="model_history"),
    path("compare/", views_compare.compare, name="compare"),
    path("compare/keyword/", views_compare.compare_keyword, name="compare_keyword"),
    path("compare/many/", views_many.compare_many_page, name="compare_many"),
    path("compare/many/csv/", views_many.compare_many_csv, name="compare_many_csv"),
    path("leaderboards/", views.leaderboard, name="leaderboard"),
]
